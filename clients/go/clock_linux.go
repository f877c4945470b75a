// Copyright (c) 2026, the dlock developers

package dlock

import (
	"syscall"
	"time"
	"unsafe"
)

// clockBoottime is CLOCK_BOOTTIME: monotonic, and it counts the time a
// suspended machine slept (CLOCK_MONOTONIC, Go's monotonic clock, does not).
const clockBoottime = 7

// now is the clock of every deadline, so that a lease whose time ran out
// while the machine was suspended is lost on resume.
func now() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime,
		uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return monotonic()
	}
	return time.Duration(ts.Nano())
}
