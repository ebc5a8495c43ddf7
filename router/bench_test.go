package router

import (
	"fmt"
	"testing"
)

// BenchmarkRoute routes the fixtures' first example row with the fixture
// config: JSON expansion on and one header placement (event_type).
func BenchmarkRoute(b *testing.B) {
	r := newTestRouter(b, connectorConfig(b))
	ev := ordersRow()
	dst := make([]Record, 0, 1)
	b.ReportAllocs()
	b.SetBytes(int64(len(ordersPayload)))
	cpu := processCPU()
	for b.Loop() {
		var err error
		dst, err = r.Route(ev, dst[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	if used := processCPU() - cpu; used > 0 {
		b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
	}
}

// TestRouteAllocations pins the allocation budget of the hot path: the
// event id string is the only allocation per row once buffers are warm.
func TestRouteAllocations(t *testing.T) {
	r := newTestRouter(t, connectorConfig(t))
	ev := ordersRow()
	dst := make([]Record, 0, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		dst, _ = r.Route(ev, dst[:0])
	})
	if allocs > 1 {
		t.Errorf("%v allocations per row, want at most 1 (the EventID string)", allocs)
	}
}

// BenchmarkAppendCompactJSON compacts a nested payload of every JSON kind,
// the work JSON expansion does per row.
func BenchmarkAppendCompactJSON(b *testing.B) {
	src := []byte(`{"orderId": 9191642889, "payableAmount": 199.00, "customer": {"id": "c-1", "tags": ["a", "b\"c", []], "vip": true},
	  "lines": [{"sku": "X1", "qty": 2, "price": 1.5e2}, {"sku": "Y2", "qty": 1, "price": -0.25, "note": null}], "paid": false}`)
	dst := make([]byte, 0, 512)
	var c compactor
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	cpu := processCPU()
	for b.Loop() {
		var err error
		dst, err = c.append(dst[:0], src)
		if err != nil {
			b.Fatal(err)
		}
	}
	if used := processCPU() - cpu; used > 0 {
		b.ReportMetric(float64(used)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkCompactShape compacts scripts/bench-converters' payload (as
// jsonb prints it) with and without its shape, the router's first step for
// an expanded payload with and without JsonConverter schemas.
func BenchmarkCompactShape(b *testing.B) {
	src := []byte(`{"a": 56, "ts": 1733600000123456, "run": "bench", "seq": 123456, "aseq": 1234, "note": "order placed by customer 56"}`)
	for _, shapes := range []bool{false, true} {
		b.Run(fmt.Sprintf("shapes=%t", shapes), func(b *testing.B) {
			c := compactor{shapes: shapes}
			var dst []byte
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				var err error
				if dst, err = c.append(dst[:0], src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
