package router

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeMessageFields: a message's content is whatever a service
// emitted. Decoding never panics, and what it accepts is a set of columns
// whose nested values are valid JSON.
func FuzzDecodeMessageFields(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","aggregatetype":"o","aggregateid":"k","payload":{"a":[1,null,{"b":null}],"c":[],"d":1.5e300}}`,
		`{"n":123456789012345678901}`, `{"s":"\u00e9\ud83d\ude00"}`, `{}`, `{"a":`, `[1]`, `not json`, `{"a":1} trailing`,
		`{"a":1,"b":{"c":1,"c":null},"a":null}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, content []byte, nullInclude bool) {
		cols, _, err := decodeMessageFields(nil, nil, content, nullInclude)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range cols {
			if seen[c.Name] {
				t.Fatalf("field %q twice from %q: Jackson keeps one per name", c.Name, content)
			}
			seen[c.Name] = true
			if c.OID == oidJSONB && !json.Valid(c.Text) {
				t.Fatalf("field %q rendered as invalid JSON %q from %q", c.Name, c.Text, content)
			}
			if c.Null && !nullInclude {
				t.Fatalf("field %q null without fields.null.include", c.Name)
			}
		}
	})
}
