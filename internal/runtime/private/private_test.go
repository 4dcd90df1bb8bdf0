package private

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestModes: what the package writes is its owner's only under the
// common umask 022, and a file or directory that was more open before
// is brought down to those modes.
func TestModes(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o022))
	dir := t.TempDir()
	old := filepath.Join(dir, "old")
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"log", "file"} {
		if err := os.WriteFile(filepath.Join(old, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := MkdirAll(old); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(dir, "new", "sub")); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(filepath.Join(old, "log"), os.O_WRONLY|os.O_APPEND)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for path, write := range map[string]func(string, []byte) error{
		filepath.Join(old, "file"): WriteFile, filepath.Join(dir, "new", "file"): WriteFile,
		filepath.Join(dir, "new", "atomic"): WriteFileAtomic, filepath.Join(dir, "new", "run.sh"): WriteScript,
	} {
		if err := write(path, []byte("y")); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]os.FileMode{
		old: DirMode, filepath.Join(old, "log"): FileMode, filepath.Join(old, "file"): FileMode,
		filepath.Join(dir, "new"): DirMode, filepath.Join(dir, "new", "sub"): DirMode,
		filepath.Join(dir, "new", "file"): FileMode, filepath.Join(dir, "new", "atomic"): FileMode,
		filepath.Join(dir, "new", "run.sh"): ExecMode,
	} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode().Perm(), err, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(old, "file")); err != nil || string(data) != "y" {
		t.Errorf("WriteFile over an existing file: %q, %v", data, err)
	}
}
