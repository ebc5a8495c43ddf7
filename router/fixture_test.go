package router

import (
	"testing"
)

// TestFixtureExamples checks the two example events of the fixtures README
// against the records written there, with the example connector config.
func TestFixtureExamples(t *testing.T) {
	r := newTestRouter(t, connectorConfig(t))
	tests := []struct {
		name                  string
		ev                    *Event
		topic, eventType, key string
		value                 string
	}{
		{"orders", ordersRow(), "orders", "paid", "9191642889", `{"orderId":9191642889,"payableAmount":199.00}`},
		{"payments", outboxRow("payments", "pay-889900", "PaymentSucceeded", paymentsPayload), "payments", "PaymentSucceeded", "pay-889900", `{"channel":"wallet","paymentId":"pay-889900"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := routeOne(t, r, tt.ev)
			if rec.Topic != tt.topic {
				t.Errorf("topic = %q, want %q", rec.Topic, tt.topic)
			}
			if string(rec.Key) != tt.key {
				t.Errorf("key = %q, want %q", rec.Key, tt.key)
			}
			if string(rec.Value) != tt.value {
				t.Errorf("value = %s, want %s", rec.Value, tt.value)
			}
			want := []Header{{"id", []byte("0195a3f2-7c1e-7d3a-9b4f-2e8c5d6a1b90")}, {"eventType", []byte(tt.eventType)}}
			if len(rec.Headers) != len(want) {
				t.Fatalf("headers = %q, want %q", rec.Headers, want)
			}
			for i := range want {
				if rec.Headers[i].Key != want[i].Key || string(rec.Headers[i].Value) != string(want[i].Value) {
					t.Errorf("header %d = %s:%s, want %s:%s", i, rec.Headers[i].Key, rec.Headers[i].Value, want[i].Key, want[i].Value)
				}
			}
			if rec.Partition != -1 {
				t.Errorf("partition = %d, want -1", rec.Partition)
			}
			if !rec.Timestamp.Equal(testCommitTime) {
				t.Errorf("timestamp = %v, want the commit time %v", rec.Timestamp, testCommitTime)
			}
			if rec.EventID != "0195a3f2-7c1e-7d3a-9b4f-2e8c5d6a1b90" {
				t.Errorf("event id = %q", rec.EventID)
			}
		})
	}
}
