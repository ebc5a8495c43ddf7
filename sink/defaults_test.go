package sink

import (
	"reflect"
	"testing"
)

// TestValidateDefaultsAreTheDeclared: a Config filled in code gets from
// Validate the same defaults ParseConfig reads from the declarations
// (internal/confkey), so the Default* constants cannot drift from them.
func TestValidateDefaultsAreTheDeclared(t *testing.T) {
	parsed, err := ParseConfig(map[string]string{KeyBootstrapServers: "k:9092"})
	if err != nil {
		t.Fatal(err)
	}
	inCode := Config{Brokers: []string{"k:9092"}, AllowAutoCreateTopics: true}
	if err := inCode.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parsed, inCode) {
		t.Errorf("parsed with the declared defaults:\n%+v\nfilled in code, defaults by Validate:\n%+v", parsed, inCode)
	}
}
