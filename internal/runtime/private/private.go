// Package private writes the files cosla keeps for its owner alone: a
// cluster's directory, its data, configs, logs, certificates and control
// token. Directories are 0700 and files 0600, whatever the process's
// umask (which can only take permissions away), and a file or directory
// that exists already, from an older cosla or another tool, is brought
// down to those modes rather than kept as it was.
package private

import (
	"os"
	"path/filepath"
)

// Modes of what the package writes.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
	// ExecMode is a script's: its owner may run it.
	ExecMode os.FileMode = 0o700
)

// MkdirAll makes dir and any missing parents 0700, and makes dir itself
// 0700 if it existed.
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return err
	}
	return os.Chmod(dir, DirMode)
}

// OpenFile opens path with flag, creating it if need be, with mode
// FileMode.
func OpenFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|os.O_CREATE, FileMode)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(FileMode); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFile writes data to path, replacing what it held, with mode
// FileMode.
func WriteFile(path string, data []byte) error {
	return writeFile(path, data, FileMode)
}

// WriteScript writes an executable script to path, with mode ExecMode.
func WriteScript(path string, data []byte) error {
	return writeFile(path, data, ExecMode)
}

// WriteFileAtomic writes data to path through a temporary file in the
// same directory and a rename, so that a reader sees the old contents or
// the new, never a part.
func WriteFileAtomic(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := WriteFile(tmp, data); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
