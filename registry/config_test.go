package registry

import (
	"strings"
	"testing"
	"time"
)

const avroClass = "io.confluent.connect.avro.AvroConverter"

func TestParseConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		m    map[string]string
		want func(Config) bool
	}{
		{"defaults", map[string]string{"value.converter.schema.registry.url": "http://r:8081/"}, func(c Config) bool {
			v := c.Value
			return v.Class == avroClass && !v.IsKey && len(v.URLs) == 1 && v.URLs[0] == "http://r:8081" && v.AutoRegister && !v.UseLatest && v.LatestStrict &&
				v.Strategy == TopicName && v.User == "" && v.BearerToken == "" && c.Key.Class == ""
		}},
		{"several URLs, user info from the URL", map[string]string{"value.converter.schema.registry.url": "https://u:p@a:8081, https://b:8081"}, func(c Config) bool {
			v := c.Value
			return len(v.URLs) == 2 && v.URLs[0] == "https://a:8081" && v.URLs[1] == "https://b:8081" && v.User == "u" && v.Password == "p"
		}},
		{"USER_INFO", map[string]string{"value.converter.schema.registry.url": "http://r", "value.converter.basic.auth.credentials.source": "user_info", "value.converter.basic.auth.user.info": "alice:pa:ss"}, func(c Config) bool {
			return c.Value.User == "alice" && c.Value.Password == "pa:ss"
		}},
		{"bearer", map[string]string{"value.converter.schema.registry.url": "http://r", "value.converter.bearer.auth.credentials.source": "STATIC_TOKEN", "value.converter.bearer.auth.token": "t"}, func(c Config) bool {
			return c.Value.BearerToken == "t"
		}},
		{"strategies, class and short names", map[string]string{"value.converter.schema.registry.url": "http://r",
			"value.converter.value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"}, func(c Config) bool {
			return c.Value.Strategy == RecordName
		}},
		{"short strategy name", map[string]string{"value.converter.schema.registry.url": "http://r", "value.converter.value.subject.name.strategy": "topicrecordnamestrategy"}, func(c Config) bool {
			return c.Value.Strategy == TopicRecordName
		}},
		{"lookup with the latest version", map[string]string{"value.converter.schema.registry.url": "http://r", "value.converter.auto.register.schemas": "false", "value.converter.use.latest.version": "true"}, func(c Config) bool {
			return !c.Value.AutoRegister && c.Value.UseLatest && c.Value.LatestTTL < 0
		}},
		{"latest.cache.ttl.sec", map[string]string{"value.converter.schema.registry.url": "http://r", "value.converter.auto.register.schemas": "false", "value.converter.use.latest.version": "true",
			"value.converter.latest.cache.ttl.sec": "300"}, func(c Config) bool {
			return c.Value.LatestTTL == 300*time.Second
		}},
		{"latest.cache.ttl.sec 0", map[string]string{"value.converter.schema.registry.url": "http://r", "value.converter.latest.cache.ttl.sec": "0"}, func(c Config) bool {
			return c.Value.LatestTTL == 0
		}},
	} {
		c, err := ParseConfig(tt.m, "", avroClass)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !tt.want(c) {
			t.Errorf("%s: got %+v", tt.name, c)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	url := "value.converter.schema.registry.url"
	for _, tt := range []struct {
		name string
		m    map[string]string
		want []string
	}{
		{"no URL", map[string]string{}, []string{url, "is required by " + avroClass}},
		// Regression: a list of commas or blanks split into no URL, passed,
		// and the first registry call panicked (integer divide by zero).
		{"only a comma", map[string]string{url: ","}, []string{url, "lists no URL", "set it to the registry's URL"}},
		{"only commas and blanks", map[string]string{url: " , "}, []string{url, "lists no URL", "set it to the registry's URL"}},
		{"not http", map[string]string{url: "r:8081"}, []string{url, "not an http"}},
		{"URL error hides the password", map[string]string{url: "ftp://u:secret@r"}, []string{url, "ftp://…@r"}},
		{"SASL_INHERIT", map[string]string{url: "http://r", "value.converter.basic.auth.credentials.source": "SASL_INHERIT"}, []string{"SASL_INHERIT", "USER_INFO"}},
		{"USER_INFO without user info", map[string]string{url: "http://r", "value.converter.basic.auth.credentials.source": "USER_INFO"}, []string{"value.converter.basic.auth.user.info"}},
		{"user info without USER_INFO", map[string]string{url: "http://r", "value.converter.basic.auth.user.info": "a:b"}, []string{"set it to USER_INFO"}},
		{"bearer without token", map[string]string{url: "http://r", "value.converter.bearer.auth.credentials.source": "STATIC_TOKEN"}, []string{"value.converter.bearer.auth.token"}},
		{"other bearer source", map[string]string{url: "http://r", "value.converter.bearer.auth.credentials.source": "OAUTHBEARER"}, []string{"static bearer token only"}},
		{"JKS trust store", map[string]string{url: "http://r", "value.converter.schema.registry.ssl.truststore.type": "JKS"}, []string{"truststore.type", "keytool"}},
		{"key password", map[string]string{url: "http://r", "value.converter.schema.registry.ssl.key.password": "x"}, []string{"key.password", "openssl pkey"}},
		{"latest with auto register", map[string]string{url: "http://r", "value.converter.use.latest.version": "true"}, []string{"auto.register.schemas=false"}},
		{"TTL below -1", map[string]string{url: "http://r", "value.converter.latest.cache.ttl.sec": "-2"}, []string{"value.converter.latest.cache.ttl.sec"}},
		{"bad strategy", map[string]string{url: "http://r", "value.converter.value.subject.name.strategy": "x.MyStrategy"}, []string{"value.converter.value.subject.name.strategy"}},
	} {
		_, err := ParseConfig(tt.m, "", avroClass)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tt.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error holds the password: %v", tt.name, err)
		}
	}
}

// Regression: a Side without URLs reached the client, whose first call
// divided by len(urls) and panicked; NewClient refuses it, naming the key.
func TestNewClientWithoutURL(t *testing.T) {
	_, err := NewClient(Side{Class: avroClass})
	if err == nil || !strings.Contains(err.Error(), "value.converter.schema.registry.url lists no URL") {
		t.Fatalf("err = %v, want an error naming value.converter.schema.registry.url", err)
	}
}
