package jsonschema

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/outboxrelay/outboxrelay/internal/connectschema"
)

// The JVM behaviours the Java converter's output depends on: the iteration
// order of java.util.HashMap (everit keeps "properties" and the connect.*
// keywords in HashMaps), Double.toString / Float.toString (Jackson writes
// numbers with them), BigDecimal.toString (the schema's numbers are re-read
// as BigDecimal) and Jackson's string escapes.

// javaHash is java.lang.String.hashCode spread as HashMap.hash does.
func javaHash(s string) uint32 {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	return spread(uint32(h))
}

// spread is HashMap.hash of a key whose hashCode is h.
func spread(h uint32) uint32 { return h ^ h>>16 }

// hashOrder returns keys (given in insertion order) in the iteration order
// of a HashMap of capacity cap holding them: by bucket, then insertion order.
func hashOrder(keys []string, cap int) []string {
	hashes := make([]uint32, len(keys))
	for i, k := range keys {
		hashes[i] = javaHash(k)
	}
	order := bucketOrder(hashes, cap)
	out := make([]string, len(keys))
	for i, j := range order {
		out[i] = keys[j]
	}
	return out
}

// bucketOrder returns the indexes of the (spread) hashes in HashMap
// iteration order for capacity cap.
func bucketOrder(hashes []uint32, cap int) []int {
	idx := make([]int, len(hashes))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return hashes[idx[a]]&uint32(cap-1) < hashes[idx[b]]&uint32(cap-1)
	})
	return idx
}

// grown is the capacity of a HashMap that started at initial and had n
// entries put into it (it doubles when the size passes 3/4 of it).
func grown(initial, n int) int {
	c := initial
	for n > c*3/4 {
		c *= 2
	}
	return c
}

// tableSizeFor is HashMap.tableSizeFor: the power of two at or above n.
func tableSizeFor(n int) int {
	c := 1
	for c < n {
		c *= 2
	}
	return c
}

// newHashMapPut is the order of a `new HashMap<>()` after putting keys.
func newHashMapPut(keys []string) []string {
	return hashOrder(keys, grown(16, len(keys)))
}

// hashMapCopy is the order of `new HashMap<>(m)` for m iterating keys, as
// HashMap.putMapEntries sizes it since Java 19: tableSizeFor(ceil(s/0.75)).
// (Java 17's tableSizeFor((int)(s/0.75f+1)) differs for 3, 6, 12… keys; for
// the connect.* keywords JsonSchemaData sets, both give the same order.)
func hashMapCopy(keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	c := tableSizeFor(int(math.Ceil(float64(len(keys)) / 0.75)))
	return hashOrder(keys, grown(c, len(keys)))
}

// hashMapSized is the order of `new HashMap<>(n)` after putting n keys
// (org.json's JSONObject(Map) constructor).
func hashMapSized(keys []string) []string {
	return hashOrder(keys, grown(tableSizeFor(len(keys)), len(keys)))
}

// javaDouble is Double.toString as Java 19 and later print it (Raffaello
// Giulietti's algorithm, JDK-4511638): the shortest digits that read back
// as the same double, at least two of them (the closest two-digit decimal
// when one would do: 4.9E-324). Java 17 prints more digits for some.
func javaDouble(f float64) string { return javaFloating(f, 64) }

// javaFloat is Float.toString.
func javaFloat(f float32) string { return javaFloating(float64(f), 32) }

func javaFloating(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	// digits d.ddd and exponent e: f = d.ddd × 10^e
	abs := math.Abs(f)
	plain := abs >= 1e-3 && abs < 1e7
	s := strconv.FormatFloat(f, 'e', -1, bits)
	if m, _, _ := strings.Cut(s, "e"); !plain && len(strings.Trim(m, "-")) == 1 {
		s = strconv.FormatFloat(f, 'e', 1, bits)
	}
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	digits := strings.Replace(mant, ".", "", 1)
	if plain {
		var ip, fp string
		if e >= 0 {
			for len(digits) < e+1 {
				digits += "0"
			}
			ip, fp = digits[:e+1], digits[e+1:]
		} else {
			ip, fp = "0", strings.Repeat("0", -e-1)+digits
		}
		if fp == "" {
			fp = "0"
		}
		return sign + ip + "." + fp
	}
	fp := digits[1:]
	if fp == "" {
		fp = "0"
	}
	return sign + digits[:1] + "." + fp + "E" + strconv.Itoa(e)
}

// bigDecimalText is how Jackson writes a number the schema text holds after
// org.json printed it and Jackson re-read it as a BigDecimal: integers as
// they are, plain decimals as they are, "1.0E20" as BigDecimal.toString
// writes it ("1.0E+20").
func bigDecimalText(s string) string {
	mant, exp, sci := strings.Cut(strings.ToUpper(s), "E")
	if !sci {
		return s
	}
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	ip, fp, _ := strings.Cut(mant, ".")
	e, _ := strconv.Atoi(exp)
	unscaled := strings.TrimLeft(ip+fp, "0")
	if unscaled == "" {
		unscaled = "0"
	}
	scale := len(fp) - e
	adjusted := -scale + len(unscaled) - 1
	if scale >= 0 && adjusted >= -6 {
		for len(unscaled) <= scale {
			unscaled = "0" + unscaled
		}
		point := len(unscaled) - scale
		if scale == 0 {
			return sign + unscaled
		}
		return sign + unscaled[:point] + "." + unscaled[point:]
	}
	out := sign + unscaled[:1]
	if len(unscaled) > 1 {
		out += "." + unscaled[1:]
	}
	if adjusted >= 0 {
		return out + "E+" + strconv.Itoa(adjusted)
	}
	return out + "E" + strconv.Itoa(adjusted)
}

// orgJSONNumber is org.json's JSONObject.numberToString for a Java
// floating value: trailing zeros of a plain decimal dropped ("1.0" → "1").
func orgJSONNumber(s string) string {
	if strings.ContainsAny(s, "eE") || !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// appendJacksonString appends s quoted as Jackson writes it: \" and \\,
// \b \t \n \f \r, other control characters as \u00XX, everything else as is.
func appendJacksonString(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// javaKeyHash is HashMap.hash of the Java object JsonConverter makes of a
// map key of schema s (Byte, Short, Integer, Long, Float, Double, Boolean,
// String; null hashes to 0). ok is false for other keys (bytes, arrays,
// maps, structs), whose hash is their identity or content: such a map keeps
// the payload's order.
func javaKeyHash(s *connectschema.Schema, v any) (h uint32, ok bool) {
	if v == nil {
		return 0, true
	}
	switch x := v.(type) {
	case string:
		return javaHash(x), s.Type == connectschema.String
	case bool:
		if x {
			return spread(1231), true
		}
		return spread(1237), true
	case json.Number:
		switch s.Type {
		case connectschema.Int8, connectschema.Int16, connectschema.Int32:
			i, err := strconv.ParseInt(string(x), 10, 32)
			return spread(uint32(int32(i))), err == nil
		case connectschema.Int64:
			i, err := strconv.ParseInt(string(x), 10, 64)
			return spread(uint32(uint64(i) ^ uint64(i)>>32)), err == nil
		case connectschema.Float:
			f, err := strconv.ParseFloat(string(x), 32)
			return spread(math.Float32bits(float32(noNegativeZero(f)))), err == nil
		case connectschema.Double:
			f, err := strconv.ParseFloat(string(x), 64)
			b := math.Float64bits(noNegativeZero(f))
			return spread(uint32(b ^ b>>32)), err == nil
		}
	}
	return 0, false
}
