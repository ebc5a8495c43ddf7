package router

import (
	"errors"
	"time"

	"github.com/outboxrelay/outboxrelay/capture"
)

// errBadTimestamp is returned for timestamp text the router cannot read.
var errBadTimestamp = errors.New("timestamp text is not in ISO DateStyle (YYYY-MM-DD hh:mm:ss[.ffffff][±hh[:mm]]); infinity and BC dates cannot be record timestamps")

// eventTimestamp parses the table.field.event.timestamp column: timestamp
// (read as UTC, as Debezium does), timestamptz (Debezium rejects it; the
// offset in PostgreSQL's text makes it unambiguous, so it is accepted
// here) or an integer of epoch milliseconds.
func eventTimestamp(v *capture.Column) (time.Time, error) {
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
	s := tsScanner{b: b}
	year, ok := s.year()
	if !ok || !s.sep('-') {
		return time.Time{}, errBadTimestamp
	}
	month, ok1 := s.num(2)
	ok2 := s.sep('-')
	day, ok3 := s.num(2)
	ok4 := s.sep(' ')
	hour, ok5 := s.num(2)
	ok6 := s.sep(':')
	minute, ok7 := s.num(2)
	ok8 := s.sep(':')
	sec, ok9 := s.num(2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8 && ok9) {
		return time.Time{}, errBadTimestamp
	}
	nsec, ok := s.fraction()
	if !ok {
		return time.Time{}, errBadTimestamp
	}
	offset := 0
	if withZone {
		if offset, ok = s.zone(); !ok {
			return time.Time{}, errBadTimestamp
		}
	}
	if s.i != len(b) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, errBadTimestamp
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	return t.Add(-time.Duration(offset) * time.Second), nil
}

// tsScanner reads timestamp text from b[i:] for parsePGTimestamp; num and
// sep leave i where it was when they fail.
type tsScanner struct {
	b []byte
	i int
}

// num reads exactly width decimal digits.
func (s *tsScanner) num(width int) (int, bool) {
	if len(s.b)-s.i < width {
		return 0, false
	}
	n := 0
	for _, c := range s.b[s.i : s.i+width] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	s.i += width
	return n, true
}

// sep reads c if it comes next.
func (s *tsScanner) sep(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// year reads the year: four to seven digits.
func (s *tsScanner) year() (int, bool) {
	year, start := 0, s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		year = year*10 + int(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	return year, n >= 4 && n <= 7
}

// fraction reads an optional ".digits" as nanoseconds; digits past the
// ninth are dropped.
func (s *tsScanner) fraction() (int, bool) {
	if !s.sep('.') {
		return 0, true
	}
	nsec, digits := 0, 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if digits < 9 {
			nsec = nsec*10 + int(s.b[s.i]-'0')
			digits++
		}
		s.i++
	}
	if digits == 0 {
		return 0, false
	}
	for ; digits < 9; digits++ {
		nsec *= 10
	}
	return nsec, true
}

// zone reads the UTC offset "±hh[:mm[:ss]]" in seconds east of UTC.
func (s *tsScanner) zone() (int, bool) {
	if s.i >= len(s.b) || (s.b[s.i] != '+' && s.b[s.i] != '-') {
		return 0, false
	}
	sign := 1
	if s.b[s.i] == '-' {
		sign = -1
	}
	s.i++
	oh, ok := s.num(2)
	if !ok {
		return 0, false
	}
	offset := oh * 3600
	if s.sep(':') {
		om, ok := s.num(2)
		if !ok {
			return 0, false
		}
		offset += om * 60
		if s.sep(':') {
			os, ok := s.num(2)
			if !ok {
				return 0, false
			}
			offset += os
		}
	}
	return sign * offset, true
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
