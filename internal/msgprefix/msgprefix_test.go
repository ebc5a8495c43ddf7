package msgprefix

import (
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	f, err := Parse(`orders,pay.*,evt-\d{1\,3}`, "")
	if err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string]bool{"orders": true, "ORDERS": true, "orders2": false, "payments": true, "xpay": false, "evt-12": true, "evt-1234": false} {
		if got := f.Includes(prefix); got != want {
			t.Errorf("include %q: %v, want %v", prefix, got, want)
		}
	}
	if f, err = Parse("", `skip.*`); err != nil || f.Includes("skip-me") || !f.Includes("keep") {
		t.Errorf("exclude list: %v", err)
	}
	if _, err := Parse("a", "b"); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("both lists: %v", err)
	}
	if _, err := Parse("(?=x)", ""); err == nil || !strings.Contains(err.Error(), "not a valid regular expression") {
		t.Errorf("look-ahead: %v", err)
	}
	if _, err := Parse(`orders\`, ""); err == nil || !strings.Contains(err.Error(), "message.prefix.include.list") {
		t.Errorf("trailing backslash: %v", err)
	}
}

func TestLiteral(t *testing.T) {
	for list, want := range map[string]string{
		"orders": "orders", " orders ": "orders", `orders\.v1`: "orders.v1", "orders.v1": "orders.v1",
		"orders-v1": "orders-v1", "orders,payments": "", "orders-.*": "", "": "", "(orders)": "orders", "orders|payments": "",
	} {
		f, err := Parse(list, "")
		if err != nil {
			t.Fatalf("%q: %v", list, err)
		}
		got, ok := f.Literal()
		if got != want || ok != (want != "") {
			t.Errorf("Literal of %q = %q, %v; want %q", list, got, ok, want)
		}
	}
}
