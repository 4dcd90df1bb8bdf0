package server

import "syscall"

// PrivateUmask sets the process's umask to 077, so that every file and
// directory it creates from then on is readable by its owner only. `cosla
// serve` calls it before Start: Pebble, through its vfs, creates its
// files with mode 0666 and its directories 0755, leaving the rest to the
// umask, and takes no mode of its own. The umask covers every file Pebble
// creates (sstables, WAL, MANIFEST, OPTIONS, LOCK, markers, those of
// later versions too) with no wrapper of its filesystem to keep in step
// with it, and with no moment at which a file is readable by others.
// Start does not call it: a process that embeds the server keeps its own
// umask, and the node directories Start makes 0700 keep its data from
// other users either way.
func PrivateUmask() { syscall.Umask(0o077) }
