package confkey

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Error is a value a declaration refuses. It never holds a secret: only
// numbers, booleans and enums are refused here, and their keys are not
// secret.
type Error struct {
	Key    string // the key as written in the file, e.g. transforms.outbox.table.expand.json.payload
	Value  string // the value as written
	Reason string // what is wrong and what to write instead
}

func (e *Error) Error() string { return fmt.Sprintf("%s %q: %s", e.Key, e.Value, e.Reason) }

// Values reads the keys of one config map through their declarations: an
// unset or blank key gets the declared default, a set one is parsed by its
// declared kind and checked against its declared range or values.
type Values struct {
	m     map[string]string
	alias string // stands for <alias> in declared names
	table []KeyDoc
}

// Read returns the reader of m.
func Read(m map[string]string) Values {
	return Values{m: m, table: keyTable()}
}

// Alias returns a reader in which the declared names'
// transforms.<alias>. stands for transforms.<alias>. of this alias.
func (v Values) Alias(alias string) Values {
	v.alias = alias
	return v
}

// Key is the map key of a declared name.
func (v Values) Key(name string) string {
	if v.alias != "" {
		return strings.Replace(name, "<alias>", v.alias, 1)
	}
	return name
}

// Set reports whether the key has a non-blank value.
func (v Values) Set(name string) bool {
	return strings.TrimSpace(v.m[v.Key(name)]) != ""
}

// decl returns the declaration of name and the key's trimmed value, or
// the declared default when it is blank.
func (v Values) decl(name string) (KeyDoc, string, error) {
	d, ok := Declared(v.table, name)
	if !ok {
		return d, "", fmt.Errorf("confkey: %s is read but not declared in internal/confkey's table", name)
	}
	if s := strings.TrimSpace(v.m[v.Key(name)]); s != "" {
		return d, s, nil
	}
	return d, d.Default, nil
}

// Text returns the key's trimmed value, or its declared default.
func (v Values) Text(name string) (string, error) {
	_, s, err := v.decl(name)
	return s, err
}

// Bool reads a boolean as Kafka's ConfigDef does: true or false, any case.
func (v Values) Bool(name string) (bool, error) {
	d, s, err := v.decl(name)
	if err != nil {
		return false, err
	}
	if s == "" {
		return false, nil // no default declared
	}
	b, err := ParseBool(s)
	if err != nil {
		return false, &Error{Key: v.Key(d.Key), Value: s, Reason: "is not a boolean; write true or false"}
	}
	return b, nil
}

// ParseBool parses "true" or "false" in any case.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

// Int reads an integer key (int, long or milliseconds) within its declared
// range.
func (v Values) Int(name string) (int64, error) {
	d, s, err := v.decl(name)
	if err != nil {
		return 0, err
	}
	if s == "" {
		return 0, nil // no default declared: the caller's zero means unset
	}
	n, reason := d.parseInt(s)
	if reason != "" {
		return 0, &Error{Key: v.Key(d.Key), Value: s, Reason: reason}
	}
	return n, nil
}

// Millis reads a milliseconds key as a time.Duration; its declared range
// keeps it within what a Duration holds, so it never wraps.
func (v Values) Millis(name string) (time.Duration, error) {
	n, err := v.Int(name)
	return time.Duration(n) * time.Millisecond, err
}

// Enum reads a key with declared Values: the accepted value as declared
// (enum values match in any case, class names exactly).
func (v Values) Enum(name string) (string, error) {
	d, s, err := v.decl(name)
	if err != nil || s == "" {
		return s, err
	}
	if a, ok := d.Match(s); ok {
		return a, nil
	}
	instead := d.Instead
	if instead == "" {
		instead = "write one of " + strings.Join(d.Values, ", ")
	}
	return "", &Error{Key: v.Key(d.Key), Value: s, Reason: "is not supported; " + instead}
}

// Match returns the entry of Values that s is: enum values in any case,
// class names exactly; surrounding spaces are ignored.
func (d KeyDoc) Match(s string) (string, bool) {
	s = strings.TrimSpace(s)
	for _, a := range d.Values {
		if strings.Contains(a, ".") && s == a || !strings.Contains(a, ".") && strings.EqualFold(s, a) {
			return a, true
		}
	}
	return "", false
}

// parseInt parses s in base 10 and checks it against the range, returning
// why it is refused: the reason names the range and a value to write.
func (d KeyDoc) parseInt(s string) (int64, string) {
	lo, hi := d.Range()
	want := fmt.Sprintf("write %s from %d to %d", d.unit(), lo, hi)
	if d.Default != "" {
		want += fmt.Sprintf(", e.g. %q: %q", d.Key, d.Default)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && (n < lo || n > hi):
		return 0, "is out of range; " + want
	case err != nil:
		return 0, "is not an integer; " + want
	}
	return n, ""
}

func (d KeyDoc) unit() string {
	switch {
	case d.Unit != "":
		return "a number of " + d.Unit
	case d.Kind == KindMillis:
		return "a number of milliseconds"
	}
	return "an integer"
}
