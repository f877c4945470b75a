// Copyright (c) 2026, the dlock developers

//go:build !linux

package dlock

import "time"

// now is the clock of every deadline: Go's monotonic clock (outside Linux
// it may not count the time a suspended machine slept).
func now() time.Duration { return monotonic() }
