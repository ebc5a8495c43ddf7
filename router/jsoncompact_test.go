package router

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"unicode/utf8"
)

func TestAppendCompactJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"orderId": 9191642889, "payableAmount": 199.00}`, `{"orderId":9191642889,"payableAmount":199.00}`},
		{` [ ] `, `[]`},
		{`{}`, `{}`},
		{`{"a": [], "b": {}, "c": null}`, `{"a":[],"b":{},"c":null}`},
		{`[1, -0, 0.5e-3, 1E+2, 12345678901234567890123]`, `[1,-0,0.5e-3,1E+2,12345678901234567890123]`},
		{`"a b\" \\ \u00e9 \/"`, `"a b\" \\ \u00e9 \/"`},
		{"true", "true"},
		{"\t\r\n false \n", "false"},
		{`{"k" : "v" , "n" : [ true , false , null ] }`, `{"k":"v","n":[true,false,null]}`},
		{`{"dup": 1, "dup": 2}`, `{"dup":1,"dup":2}`}, // json type keeps duplicates; so do we
		{`"é😀"`, `"é😀"`},
	}
	for _, tt := range tests {
		got, err := new(compactor).append([]byte("prefix:"), []byte(tt.in))
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if string(got) != "prefix:"+tt.want {
			t.Errorf("%q = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAppendCompactJSONInvalid(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
		`tru`, `nul`, `"abc`, "\"a\nb\"", `"\x"`, `"\u12g4"`, `[1 2]`, `{} {}`, `1 2`, `NaN`, `'a'`, `[`, `["a":1]`,
	} {
		if got, err := new(compactor).append(nil, []byte(in)); err == nil {
			t.Errorf("%q accepted as %q", in, got)
		}
		if json.Valid([]byte(in)) {
			t.Errorf("test bug: %q is valid JSON", in)
		}
	}
}

// TestAppendCompactJSONNoAllocs pins the hot path: with warm buffers the
// compaction allocates nothing, shapes written or not.
func TestAppendCompactJSONNoAllocs(t *testing.T) {
	src := []byte(`{"a": [1, {"b": [2, [3]]}], "c": "d"}`)
	dst := make([]byte, 0, 256)
	c := compactor{shapes: true}
	allocs := testing.AllocsPerRun(100, func() {
		dst, _ = c.append(dst[:0], src)
		c.shapes = !c.shapes
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}

// FuzzExpandJSON: for any input encoding/json accepts, the compacted output
// is valid JSON and equal to the input token for token, numbers compared as
// their literal text; inputs encoding/json rejects are rejected too (up to
// encoding/json's nesting limit, which the compactor does not have).
func FuzzExpandJSON(f *testing.F) {
	for _, s := range []string{
		`{"orderId": 9191642889, "payableAmount": 199.00}`,
		`{"channel": "wallet", "paymentId": "pay-889900"}`,
		`[1, "two", {"three": [null, true, false, {}, []]}]`,
		`"\u00e9\n\"\\"`, `-0.0e+00`, ` 123456789012345678901234567890 `, `{"a" : {"b" : {"c" : []}}}`,
		`[1,]`, `{"a":}`, "\"\x01\"", `01`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := new(compactor).append(nil, in)
		valid := json.Valid(in)
		if err != nil {
			if valid {
				t.Fatalf("valid JSON %q rejected: %v", in, err)
			}
			return
		}
		if !valid {
			// Only nesting deeper than encoding/json's limit may differ.
			if bytes.Count(in, []byte("["))+bytes.Count(in, []byte("{")) < 10000 {
				t.Fatalf("invalid JSON %q accepted as %q", in, out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output %q of %q is not valid JSON", out, in)
		}
		wantToks, gotToks := tokens(t, in), tokens(t, out)
		if len(wantToks) != len(gotToks) {
			t.Fatalf("%d tokens in, %d out: %q -> %q", len(wantToks), len(gotToks), in, out)
		}
		for i := range wantToks {
			if wantToks[i] != gotToks[i] {
				t.Fatalf("token %d: %v in, %v out", i, wantToks[i], gotToks[i])
			}
		}
		for _, c := range out {
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				if !bytes.Contains(in, []byte{c}) {
					t.Fatalf("output %q has whitespace the input lacks", out)
				}
			}
		}
		if len(out) > len(in) {
			t.Fatalf("output %q is longer than input %q", out, in)
		}
	})
}

// tokens lists the JSON tokens with numbers as their literal text.
func tokens(t *testing.T, data []byte) []any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var toks []any
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return toks
		}
		if err != nil {
			t.Fatalf("tokenizing %q: %v", data, err)
		}
		if n, ok := tok.(json.Number); ok {
			tok = "number:" + string(n)
		} else if s, ok := tok.(string); ok {
			tok = "string:" + s
		}
		toks = append(toks, tok)
	}
}

// TestAppendJSONString pins the escaping Jackson writes (upper-case hex,
// '/' and DEL as is), for a string and for []byte, and that the result
// reads back as the input.
func TestAppendJSONString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`say "hi"`, `"say \"hi\""`},
		{`C:\dir`, `"C:\\dir"`},
		{"a/b", `"a/b"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00", `"\u0000"`},
		{"\x01\x0b\x1a\x1f", `"\u0001\u000B\u001A\u001F"`},
		{"\x7f", "\"\x7f\""},
		{"é😀ключ", `"é😀ключ"`},
		{"\xff\xfe", "\"\xff\xfe\""}, // not UTF-8: bytes as is, as the router always did
		{"a\"b\\c/d\b\f\n\r\t\x00\x1f\x7fé", `"a\"b\\c/d\b\f\n\r\t\u0000\u001F` + "\x7fé" + `"`},
	}
	for _, tt := range tests {
		if got := string(AppendJSONString([]byte("x:"), tt.in)); got != "x:"+tt.want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if got := string(AppendJSONString(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("AppendJSONString([]byte(%q)) = %s, want %s", tt.in, got, tt.want)
		}
		if !utf8.ValidString(tt.in) {
			continue
		}
		var back string
		if err := json.Unmarshal([]byte(tt.want), &back); err != nil || back != tt.in {
			t.Errorf("round trip of %q: %q, %v", tt.in, back, err)
		}
	}
}

func jsonValid(b []byte) bool { return json.Valid(b) }
