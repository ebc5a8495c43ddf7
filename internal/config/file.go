package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Size limits of the files Load reads: a connector file is a few
// kilobytes, a ${file:…} properties file holds a few secrets. The limits
// keep /dev/zero-like paths and mistakes (a log file named instead) from
// filling memory.
const (
	MaxConnectorFileSize  = 16 << 20
	MaxPropertiesFileSize = 1 << 20
)

// ReadFile reads the regular file at path, at most limit bytes; what names
// the file in errors ("the connector file", "a ${file:} properties file").
// A FIFO, a device, a directory or a socket is refused before it is
// opened, so that nothing blocks or reads without end; the file is opened
// non-blocking and checked again, in case the path was replaced in
// between. Errors start with the path and never quote the content.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	info, err := os.Stat(path) // follows symbolic links, as Kubernetes secrets are
	if err != nil {
		return nil, pathError(path, err)
	}
	if err := regular(path, info, limit, what); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, pathError(path, err)
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, pathError(path, err)
	}
	if err := regular(path, info, limit, what); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, pathError(path, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit, what)
	}
	return data, nil
}

// regular refuses what is not a regular file of at most limit bytes.
func regular(path string, info fs.FileInfo, limit int64, what string) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: is not a regular file but %s; %s must be a regular file", path, modeName(info.Mode()), what)
	}
	if info.Size() > limit {
		return tooLarge(path, limit, what)
	}
	return nil
}

func tooLarge(path string, limit int64, what string) error {
	return fmt.Errorf("%s: is larger than %d bytes (%d MiB), the most %s may be; is it the right file?", path, limit, limit>>20, what)
}

func modeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// pathError is err of an operation on path, starting with the path once.
func pathError(path string, err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return fmt.Errorf("%s: %s: %w", path, pe.Op, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}
