package postgres

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// maxPEMFile bounds a TLS file the connection reads (database.sslrootcert,
// database.sslcert, database.sslkey): a CA bundle of a few hundred
// certificates fits many times over.
const maxPEMFile = 1 << 20

// checkTLSFiles refuses, before pgx reads them, a TLS file that is not a
// regular file or is larger than maxPEMFile. pgx reads these files with
// os.ReadFile, which on /dev/zero runs the process out of memory and on a
// FIFO blocks for ever; Stat answers for both without opening the file.
// sslrootcert=system is libpq's name for the system's roots, no file.
func (c *Config) checkTLSFiles() error {
	var errs []error
	for _, f := range []struct{ key, path string }{
		{"database.sslrootcert", c.SSLRootCert},
		{"database.sslcert", c.SSLCert},
		{"database.sslkey", c.SSLKey},
	} {
		if f.path == "" || f.key == "database.sslrootcert" && f.path == "system" {
			continue
		}
		if err := checkFile(f.key, f.path, maxPEMFile); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkFile: path, named by key, is a regular file (after symbolic links)
// of at most limit bytes.
func checkFile(key, path string, limit int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named below
		}
		return fmt.Errorf("%s %q: %w; name a readable PEM file", key, path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %q is %s, not a regular file; name a PEM file", key, path, fileKind(fi.Mode()))
	}
	if fi.Size() > limit {
		return fmt.Errorf("%s %q has %d bytes, more than the %d a PEM file may have here; name the PEM file itself", key, path, fi.Size(), limit)
	}
	return nil
}

// fileKind names a mode that is not a regular file, for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
