// Copyright (c) 2026, the dlock developers

package dlock

import "time"

var start = time.Now()

// monotonic is Go's monotonic clock, counted from the start of the process.
func monotonic() time.Duration { return time.Since(start) }
