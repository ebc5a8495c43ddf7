package avro

import (
	"testing"
)

// benchRecords are a typical outbox payload (the router's expanded
// order event) and the envelope layout around it.
func benchCases() []struct{ name, schema, payload string } {
	var out []struct{ name, schema, payload string }
	for _, tc := range schemaCases() {
		switch tc.name {
		case "value-expanded-object", "value-envelope", "value-unexpanded-json":
			out = append(out, struct{ name, schema, payload string }{tc.name, tc.schema, tc.payloads[0]})
		}
	}
	return out
}

// BenchmarkAppend encodes the payload; BenchmarkAppend/…/copy is the
// baseline JsonConverter's record costs at this stage: copying the
// payload's JSON bytes.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range benchCases() {
		_, c := compileCase(&testing.T{}, bc.schema)
		payload := []byte(bc.payload)
		b.Run(bc.name+"/avro", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			var dst []byte
			var err error
			for b.Loop() {
				if dst, err = c.Append(dst[:0], payload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(dst)), "body-bytes")
		})
		b.Run(bc.name+"/copy", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			var dst []byte
			for b.Loop() {
				dst = append(dst[:0], payload...)
			}
			b.ReportMetric(float64(len(dst)), "body-bytes")
		})
	}
}
