package postgres

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// maxPEMFile bounds a TLS file the connection reads (database.sslrootcert,
// database.sslcert, database.sslkey): a CA bundle of a few hundred
// certificates fits many times over.
const maxPEMFile = 1 << 20

// checkTLSFiles refuses, before pgx reads them, a file of the connection
// that is not a regular file or is larger than maxPEMFile. pgx reads the
// TLS files with os.ReadFile, which on /dev/zero runs the process out of
// memory and on a FIFO blocks for ever; Stat answers for both without
// opening the file. Where a key is blank, pgx (as libpq) falls back to an
// environment variable, then to a file under the home directory when it
// exists; those are checked too, named as what they stand for, and so is
// the password file pgx reads when database.password is blank.
// sslrootcert=system is libpq's name for the system's roots, no file.
func (c *Config) checkTLSFiles() error {
	home, _ := os.UserHomeDir()
	var errs []error
	for _, f := range []struct{ key, path, env, home string }{
		{"database.sslrootcert", c.SSLRootCert, "PGSSLROOTCERT", ".postgresql/root.crt"},
		{"database.sslcert", c.SSLCert, "PGSSLCERT", ".postgresql/postgresql.crt"},
		{"database.sslkey", c.SSLKey, "PGSSLKEY", ".postgresql/postgresql.key"},
		{"database.password", c.Password, "PGPASSFILE", ".pgpass"},
	} {
		key, path := f.key, f.path
		if f.key == "database.password" {
			if f.path != "" {
				continue // the password itself, no file
			}
			path = ""
		}
		switch {
		case path != "":
		case os.Getenv(f.env) != "":
			key, path = f.env+" (for "+f.key+", which is blank)", os.Getenv(f.env)
		case home != "":
			key, path = "~/"+f.home+" (read for "+f.key+", which is blank)", filepath.Join(home, f.home)
			if _, err := os.Stat(path); err != nil {
				continue // pgx uses it only when it exists
			}
		default:
			continue
		}
		if f.key == "database.sslrootcert" && path == "system" {
			continue
		}
		if _, err := os.Stat(path); f.key == "database.password" && errors.Is(err, fs.ErrNotExist) {
			continue // pgx skips a password file that is not there
		}
		if err := checkFile(key, path, maxPEMFile); err != nil {
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
