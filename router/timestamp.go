package router

import (
	"errors"
	"time"
)

// errBadTimestamp is returned for timestamp text the router cannot read.
var errBadTimestamp = errors.New("timestamp text is not in ISO DateStyle (YYYY-MM-DD hh:mm:ss[.ffffff][±hh[:mm]]); infinity and BC dates cannot be record timestamps")

// eventTimestamp parses the table.field.event.timestamp column: timestamp
// (read as UTC, as Debezium does), timestamptz (Debezium rejects it; the
// offset in PostgreSQL's text makes it unambiguous, so it is accepted
// here) or an integer of epoch milliseconds.
func eventTimestamp(v Value) (time.Time, error) {
	switch v.OID {
	case oidTimestamp:
		return parsePGTimestamp(v.Text, false)
	case oidTimestampTZ:
		return parsePGTimestamp(v.Text, true)
	case oidInt8, oidInt4, oidInt2:
		ms, ok := parseInt(v.Text)
		if !ok {
			return time.Time{}, errors.New("epoch-millisecond text is not an integer")
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	return time.Time{}, errors.New("the column must be timestamp, timestamptz or bigint (epoch milliseconds)")
}

// parsePGTimestamp parses PostgreSQL's ISO DateStyle output,
// "2006-01-02 15:04:05[.999999][+07[:00[:00]]]", without allocating.
func parsePGTimestamp(b []byte, withZone bool) (time.Time, error) {
	bad := errBadTimestamp
	i := 0
	num := func(width int) (int, bool) {
		if len(b)-i < width {
			return 0, false
		}
		n := 0
		for _, c := range b[i : i+width] {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		i += width
		return n, true
	}
	sep := func(c byte) bool {
		if i < len(b) && b[i] == c {
			i++
			return true
		}
		return false
	}
	// The year has at least four digits.
	year := 0
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		year = year*10 + int(b[i]-'0')
		i++
	}
	if i-start < 4 || i-start > 7 || !sep('-') {
		return time.Time{}, bad
	}
	month, ok1 := num(2)
	ok2 := sep('-')
	day, ok3 := num(2)
	ok4 := sep(' ')
	hour, ok5 := num(2)
	ok6 := sep(':')
	minute, ok7 := num(2)
	ok8 := sep(':')
	sec, ok9 := num(2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8 && ok9) {
		return time.Time{}, bad
	}
	nsec := 0
	if sep('.') {
		digits := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if digits < 9 {
				nsec = nsec*10 + int(b[i]-'0')
				digits++
			}
			i++
		}
		if digits == 0 {
			return time.Time{}, bad
		}
		for ; digits < 9; digits++ {
			nsec *= 10
		}
	}
	offset := 0
	if withZone {
		if i >= len(b) || (b[i] != '+' && b[i] != '-') {
			return time.Time{}, bad
		}
		sign := 1
		if b[i] == '-' {
			sign = -1
		}
		i++
		oh, ok := num(2)
		if !ok {
			return time.Time{}, bad
		}
		offset = oh * 3600
		if sep(':') {
			om, ok := num(2)
			if !ok {
				return time.Time{}, bad
			}
			offset += om * 60
			if sep(':') {
				os, ok := num(2)
				if !ok {
					return time.Time{}, bad
				}
				offset += os
			}
		}
		offset *= sign
	}
	if i != len(b) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, bad
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	return t.Add(-time.Duration(offset) * time.Second), nil
}

// parseInt parses a decimal int64 without allocating.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}
