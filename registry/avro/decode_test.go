package avro

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// decodeAvro is the tests' own reader of the Avro binary encoding: it
// decodes body by the schema n into JSON (records as objects in field
// order, maps as objects, unions as the branch's value, bytes in base64,
// MapEntry records as {"key":…,"value":…}: Apache Avro's generic form) and
// fails unless it uses all of body.
func decodeAvro(n *node, body []byte) ([]byte, error) {
	d := avroReader{b: body}
	out, err := d.value(nil, n)
	if err != nil {
		return nil, err
	}
	if d.i != len(d.b) {
		return nil, fmt.Errorf("%d bytes left after the value", len(d.b)-d.i)
	}
	return out, nil
}

type avroReader struct {
	b []byte
	i int
}

func (d *avroReader) long() (int64, error) {
	v, k := binary.Varint(d.b[d.i:])
	if k <= 0 {
		return 0, errors.New("bad varint")
	}
	d.i += k
	return v, nil
}

func (d *avroReader) take(k int) ([]byte, error) {
	if k < 0 || d.i+k > len(d.b) {
		return nil, errors.New("short body")
	}
	p := d.b[d.i : d.i+k]
	d.i += k
	return p, nil
}

func (d *avroReader) value(out []byte, n *node) ([]byte, error) {
	switch n.kind {
	case tNull:
		return append(out, "null"...), nil
	case tBoolean:
		p, err := d.take(1)
		if err != nil || p[0] > 1 {
			return nil, errors.New("bad boolean")
		}
		return strconv.AppendBool(out, p[0] == 1), nil
	case tInt, tLong:
		v, err := d.long()
		if n.kind == tInt && (v < math.MinInt32 || v > math.MaxInt32) {
			return nil, errors.New("int out of range")
		}
		return strconv.AppendInt(out, v, 10), err
	case tFloat:
		p, err := d.take(4)
		if err != nil {
			return nil, err
		}
		return appendFloat(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(p))), 32), nil
	case tDouble:
		p, err := d.take(8)
		if err != nil {
			return nil, err
		}
		return appendFloat(out, math.Float64frombits(binary.LittleEndian.Uint64(p)), 64), nil
	case tString, tBytes:
		k, err := d.long()
		if err != nil {
			return nil, err
		}
		p, err := d.take(int(k))
		if err != nil {
			return nil, err
		}
		if n.kind == tBytes {
			return appendJSONString(out, base64.StdEncoding.EncodeToString(p)), nil
		}
		return appendJSONString(out, string(p)), nil
	case tUnion:
		k, err := d.long()
		if err != nil || k < 0 || k >= int64(len(n.branches)) {
			return nil, errors.New("bad union branch")
		}
		return d.value(out, n.branches[k])
	case tRecord:
		out = append(out, '{')
		for i, f := range n.fields {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(appendJSONString(out, f.name), ':')
			var err error
			if out, err = d.value(out, f.typ); err != nil {
				return nil, err
			}
		}
		return append(out, '}'), nil
	}
	return d.blocks(out, n)
}

// blocks reads an array's or a map's blocks.
func (d *avroReader) blocks(out []byte, n *node) ([]byte, error) {
	open, end := byte('['), byte(']')
	if n.kind == tMap {
		open, end = '{', '}'
	}
	out = append(out, open)
	first := true
	for {
		count, err := d.long()
		if err != nil {
			return nil, err
		}
		if count == 0 {
			return append(out, end), nil
		}
		if count < 0 {
			count = -count
			if _, err := d.long(); err != nil { // the block's size
				return nil, err
			}
		}
		for ; count > 0; count-- {
			if !first {
				out = append(out, ',')
			}
			first = false
			if n.kind == tMap {
				k, err := d.long()
				if err != nil {
					return nil, err
				}
				key, err := d.take(int(k))
				if err != nil {
					return nil, err
				}
				out = append(appendJSONString(out, string(key)), ':')
				if out, err = d.value(out, n.values); err != nil {
					return nil, err
				}
				continue
			}
			if out, err = d.value(out, n.items); err != nil {
				return nil, err
			}
		}
	}
}

// appendFloat writes an infinity as 1e999 (a JSON number that reads back
// as one) and NaN as the string "NaN".
func appendFloat(out []byte, f float64, bits int) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(out, "1e999"...)
	case math.IsInf(f, -1):
		return append(out, "-1e999"...)
	case math.IsNaN(f):
		return append(out, `"NaN"`...)
	}
	return strconv.AppendFloat(out, f, 'g', -1, bits)
}
