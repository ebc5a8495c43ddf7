package jsonschema

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
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
	u := uint32(h)
	return u ^ u>>16
}

// hashOrder returns keys (given in insertion order) in the iteration order
// of a HashMap of capacity cap holding them: by bucket, then insertion order.
func hashOrder(keys []string, cap int) []string {
	out := append([]string(nil), keys...)
	sort.SliceStable(out, func(i, j int) bool {
		return javaHash(out[i])&uint32(cap-1) < javaHash(out[j])&uint32(cap-1)
	})
	return out
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
// Java 17's HashMap.putMapEntries sizes it: tableSizeFor((int)(s/0.75f+1)).
func hashMapCopy(keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	c := tableSizeFor(int(float32(len(keys))/0.75 + 1))
	return hashOrder(keys, grown(c, len(keys)))
}

// hashMapSized is the order of `new HashMap<>(n)` after putting n keys
// (org.json's JSONObject(Map) constructor).
func hashMapSized(keys []string) []string {
	return hashOrder(keys, grown(tableSizeFor(len(keys)), len(keys)))
}

// javaDouble is Double.toString (shortest digits, as Java 19 and later).
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
	s := strconv.FormatFloat(f, 'e', -1, bits)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	digits := strings.Replace(mant, ".", "", 1)
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
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
