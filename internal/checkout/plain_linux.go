package checkout

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openPlain opens name below the directory dir in one openat2(2) call,
// when no component of name is a symlink. The Root's open walks the
// name a component at a time, and ReadFile's resolve lstats each prefix:
// at 10,000 files two directories deep, 0.9 s of a plan's CPU went to
// those system calls. ok is false whenever it did not open: a symlink on
// the way, "..", a kernel before 5.6, a seccomp filter. The caller then
// takes the slow way, which gives the errors it always gave.
func openPlain(dir *os.File, name string) (f *os.File, ok bool) {
	if dir == nil {
		return nil, false
	}
	fd, err := openat2(dir, name)
	if err != nil {
		return nil, false
	}
	return os.NewFile(uintptr(fd), name), true
}

// openat2 opens name below dir for reading, refusing any symlink on the
// way and any step out of dir.
func openat2(dir *os.File, name string) (int, error) {
	return unix.Openat2(int(dir.Fd()), name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | openFlags,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// readPlain reads name below dir as readOpen does, on the descriptor
// itself: an *os.File costs two more system calls a file (fcntl, and an
// epoll_ctl that fails for a regular file) and a cleanup to register.
// ok is false when openPlain's open did not open it; then nothing was
// read and the caller takes the slow way.
func readPlain(dir *os.File, name string, max int64) (b []byte, ok bool, err error) {
	if dir == nil {
		return nil, false, nil
	}
	fd, err := openat2(dir, name)
	if err != nil {
		return nil, false, nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := retry(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, true, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, true, ErrNotRegular
	}
	if st.Size > max {
		return nil, true, tooLarge(max)
	}
	b, err = readSized(fdReader{fd, name}, st.Size, max)
	return b, true, err
}

// fdReader reads a descriptor as an *os.File would, without being one.
type fdReader struct {
	fd   int
	name string
}

func (r fdReader) Read(p []byte) (int, error) {
	var n int
	err := retry(func() (err error) {
		n, err = unix.Read(r.fd, p)
		return err
	})
	switch {
	case err != nil:
		return 0, &fs.PathError{Op: "read", Path: r.name, Err: err}
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// retry runs call again while it is interrupted by a signal.
func retry(call func() error) error {
	for {
		if err := call(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
