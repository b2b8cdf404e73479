package dbfile

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"unsafe"
)

// A db file is read through bbolt's memory map of it. A page the map covers
// that the file no longer holds (it shrank while open) or that the disk
// cannot read faults, which ends the process unless the goroutine reading
// asked for a panic instead (debug.SetPanicOnFault). Every read of the map
// in this package runs under a guard that asks for it and turns the panic
// into an error naming the file and the page.

// span is where a file is mapped.
type span struct {
	base, size uintptr
	pageSize   int64
}

// holds reports whether addr is in the span.
func (s span) holds(addr uintptr) bool {
	return s.base != 0 && addr >= s.base && addr-s.base < s.size
}

// fits reports whether b, when it starts in the span, ends within its first
// size bytes: the file's own pages, not the map past the file's end (a
// damaged page's record running past it). b outside the span fits: bbolt
// reads an unaligned inline bucket from a copy of its own.
func (s span) fits(b []byte, size int64) bool {
	if len(b) == 0 {
		return true
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return !s.holds(p) || int64(p-s.base)+int64(len(b)) <= size
}

// errOutside says a key or record of the key bucket is not in the file's
// pages (a damaged page pointing past them).
var errOutside = errors.New("a key or record outside the file's pages")

// mapSize is the length bbolt maps a file of size bytes with (DB.mmapSize,
// read-only, no initial map size): a power of two from 32 KiB to 1 GiB, then
// whole GiBs.
func mapSize(size int64) uintptr {
	for i := 15; i <= 30; i++ {
		if size <= 1<<i {
			return 1 << i
		}
	}
	const gib = 1 << 30
	return uintptr((size + gib - 1) / gib * gib)
}

// faultAddr returns the address of a memory fault that r, a recovered
// panic, is. A nil dereference is not one: its runtime error has no address.
func faultAddr(r any) (uintptr, bool) {
	if _, ok := r.(runtime.Error); !ok {
		return 0, false
	}
	a, ok := r.(interface{ Addr() uintptr })
	if !ok {
		return 0, false
	}
	return a.Addr(), true
}

// fileError is an error that names its db file: wrapping it as the file's
// names the file no second time.
type fileError struct{ msg string }

func (e *fileError) Error() string { return e.msg }

// faultError is the error of a fault at addr reading the file.
func (f *File) faultError(addr uintptr) error {
	if !f.span.holds(addr) {
		return &fileError{fmt.Sprintf("db file %s is damaged: a read outside its memory map (a page pointing past the file?)", f.info.Path)}
	}
	off := int64(addr - f.span.base)
	return &fileError{fmt.Sprintf("db file %s could not be read at page %d (byte %d): a fault on its memory map, the page past the file's end (it shrank while open?) or unreadable on disk",
		f.info.Path, off/f.span.pageSize, off)}
}

// panicError turns r, a panic reading the file (bbolt panics on some damaged
// pages; a fault panics under a guard), into the file's error.
func (f *File) panicError(r any) error {
	if addr, ok := faultAddr(r); ok {
		return f.faultError(addr)
	}
	return &fileError{fmt.Sprintf("db file %s is damaged: %v", f.info.Path, r)}
}

// damaged is err as the file's damage, in one line.
func (f *File) damaged(err error) error {
	if fe := (*fileError)(nil); errors.As(err, &fe) {
		return err
	}
	return &fileError{fmt.Sprintf("db file %s is damaged: %s", f.info.Path, oneLine(err))}
}

// guarded makes the faults of the calling goroutine panics until the
// function it returns, deferred, runs: that one restores the goroutine's
// setting and turns a panic into *err with conv, or panics on with it when
// conv says it is not its own.
func guarded(err *error, conv func(r any) (error, bool)) func() {
	prev := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			e, ok := conv(r)
			if !ok {
				panic(r)
			}
			*err = e
		}
	}
}

// guard guards a read that runs bbolt's code and this package's only: any
// panic is the file's error. Use:
//
//	defer f.guard(&err)()
func (f *File) guard(err *error) func() {
	return guarded(err, func(r any) (error, bool) { return f.panicError(r), true })
}

// mapFault is the file's error for r when it is a fault: on the file's map,
// or, reading what the file handed out, outside it (a damaged page's record
// pointing past the map; the package reads no other memory that can fault).
func (f *File) mapFault(r any) (error, bool) {
	if addr, ok := faultAddr(r); ok {
		return f.faultError(addr), true
	}
	return nil, false
}

// Guard guards a goroutine that reads the key-values the file handed out
// (they alias its memory map) other than the one that called Revisions or
// RevisionSizes: a fault becomes the file's error in *err; any other panic
// (a nil dereference among them) goes on. Use:
//
//	defer f.Guard(&err)()
func (f *File) Guard(err *error) func() { return guarded(err, f.mapFault) }

// Guard is File.Guard for the key-values a Store hands out; a fault on its
// cached index, mapped too, names the index file. Range, First, Get and
// Count guard the goroutine that calls them.
func (s *Store) Guard(err *error) func() { return guardStores(err, s) }

// guardStores is Guard for a goroutine that reads several stores: a fault
// is the error of the store whose map (file or index) holds its address,
// else, outside every map, of the first.
func guardStores(err *error, stores ...*Store) func() {
	return guarded(err, func(r any) (error, bool) {
		addr, ok := faultAddr(r)
		if !ok {
			return nil, false
		}
		for _, s := range stores {
			switch {
			case s.idx.holds(addr):
				return fmt.Errorf("%w: a fault reading it at byte %d (remove %s)", errIndex, addr-s.idx.base(), indexPath(s.path)), true
			case s.file.span.holds(addr):
				return s.file.faultError(addr), true
			}
		}
		return stores[0].file.faultError(addr), true
	})
}

// base is where the index is mapped.
func (ix *index) base() uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(ix.data))) }

// holds reports whether addr is in the index's map (to the end of its last
// page).
func (ix *index) holds(addr uintptr) bool {
	if ix == nil || len(ix.data) == 0 {
		return false
	}
	size := uintptr(len(ix.data)+os.Getpagesize()-1) / uintptr(os.Getpagesize()) * uintptr(os.Getpagesize())
	return addr >= ix.base() && addr-ix.base() < size
}
