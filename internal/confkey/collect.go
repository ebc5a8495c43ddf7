package confkey

import (
	"errors"
	"time"
)

// Collector reads keys as Values does, keeping every error, so that a
// parser reads all its keys in a row and reports every bad one at once
// (Err). A key that fails reads as its type's zero value.
type Collector struct {
	v    Values
	errs []error
}

// Collect returns a collecting reader of m.
func Collect(m map[string]string) *Collector {
	return &Collector{v: Read(m)}
}

func (c *Collector) add(err error) {
	if err != nil {
		c.errs = append(c.errs, err)
	}
}

// Text reads a text key (Values.Text).
func (c *Collector) Text(name string) string {
	s, err := c.v.Text(name)
	c.add(err)
	return s
}

// Bool reads a boolean key (Values.Bool).
func (c *Collector) Bool(name string) bool {
	b, err := c.v.Bool(name)
	c.add(err)
	return b
}

// Int reads an integer key within its declared range (Values.Int).
func (c *Collector) Int(name string) int64 {
	n, err := c.v.Int(name)
	c.add(err)
	return n
}

// Millis reads a milliseconds key (Values.Millis).
func (c *Collector) Millis(name string) time.Duration {
	d, err := c.v.Millis(name)
	c.add(err)
	return d
}

// Err joins every error read so far; nil when there was none.
func (c *Collector) Err() error { return errors.Join(c.errs...) }
