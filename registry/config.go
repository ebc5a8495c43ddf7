package registry

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/confkey"
	"github.com/outboxrelay/outboxrelay/internal/textlist"
)

// Strategy is a subject name strategy (Confluent's
// io.confluent.kafka.serializers.subject.*): the subject a schema is
// registered under.
type Strategy int

const (
	// TopicName: <topic>-key or <topic>-value (TopicNameStrategy, the default).
	TopicName Strategy = iota
	// RecordName: the schema's name (RecordNameStrategy).
	RecordName
	// TopicRecordName: <topic>-<the schema's name> (TopicRecordNameStrategy).
	TopicRecordName
)

func (s Strategy) String() string {
	return [...]string{"TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy"}[s]
}

// Subject returns the subject of a schema named name written to topic, as
// Confluent's strategy of the same name (TopicNameStrategy.subjectName,
// RecordNameStrategy.subjectName, TopicRecordNameStrategy.subjectName).
func (s Strategy) Subject(topic string, isKey bool, name string) string {
	switch s {
	case RecordName:
		return name
	case TopicRecordName:
		return topic + "-" + name
	}
	if isKey {
		return topic + "-key"
	}
	return topic + "-value"
}

// Side is the configuration of one converter, key.converter or
// value.converter, when it is a schema-registry converter.
type Side struct {
	Class string // router.AvroConverterClass or router.JSONSchemaConverterClass; "" for none
	IsKey bool
	// URLs: schema.registry.url, tried in turn.
	URLs []string
	// Basic auth: Source is basic.auth.credentials.source, USER_INFO
	// (basic.auth.user.info) or URL (the URL's own user info). Never logged.
	Source         string
	User, Password string
	// BearerToken: bearer.auth.token with bearer.auth.credentials.source=STATIC_TOKEN.
	BearerToken string
	// TLS files, PEM: schema.registry.ssl.truststore.location (empty: the
	// system roots) and schema.registry.ssl.keystore.location (the
	// certificate chain and an unencrypted key in one file; empty: none).
	TLSCAFile, TLSKeyFile string
	AutoRegister          bool // auto.register.schemas
	UseLatest             bool // use.latest.version
	// LatestTTL is latest.cache.ttl.sec: how long a latest version read
	// is kept; negative: forever (Confluent's default, -1).
	LatestTTL    time.Duration
	LatestStrict bool // latest.compatibility.strict
	Strategy     Strategy
}

// Prefix is the side's key prefix: key.converter. or value.converter.
func (s Side) Prefix() string {
	if s.IsKey {
		return "key.converter."
	}
	return "value.converter."
}

// Config is both converters' registry configuration.
type Config struct {
	Key, Value Side
}

// ParseConfig reads the schema-registry keys of both converters from m
// (the relay section of the connector file), keyClass and valueClass
// being the registry converter classes the router parsed ("" for
// another converter). The keys of a side whose converter is not a
// registry's are checked and keep their defaults.
func ParseConfig(m map[string]string, keyClass, valueClass string) (Config, error) {
	k, err1 := parseSide(m, "key", keyClass)
	v, err2 := parseSide(m, "value", valueClass)
	return Config{Key: k, Value: v}, errors.Join(err1, err2)
}

func parseSide(m map[string]string, side, class string) (Side, error) {
	p := side + ".converter."
	tls := p + "schema.registry.ssl."
	c := confkey.Collect(m)
	s := Side{Class: class, IsKey: side == "key"}
	s.AutoRegister = c.Bool(p + "auto.register.schemas")
	s.UseLatest = c.Bool(p + "use.latest.version")
	s.LatestStrict = c.Bool(p + "latest.compatibility.strict")
	s.LatestTTL = -1
	if ttl := c.Int(p + "latest.cache.ttl.sec"); ttl >= 0 {
		s.LatestTTL = time.Duration(ttl) * time.Second
	}
	var errs []error
	v := confkey.Read(m)
	enum := func(name string) string {
		e, err := v.Enum(name)
		errs = append(errs, err)
		return e
	}
	strategy := enum(p + side + ".subject.name.strategy")
	s.Strategy = parseStrategy(strategy)
	source := enum(p + "basic.auth.credentials.source")
	s.Source = source
	bearer := enum(p + "bearer.auth.credentials.source")
	enum(tls + "truststore.type")
	enum(tls + "keystore.type")
	enum(tls + "key.password")
	s.TLSCAFile = c.Text(tls + "truststore.location")
	s.TLSKeyFile = c.Text(tls + "keystore.location")
	urls := c.Text(p + "schema.registry.url")
	userInfo := c.Text(p + "basic.auth.user.info")
	s.BearerToken = c.Text(p + "bearer.auth.token")
	errs = append(errs, c.Err())
	if class == "" {
		return s, errors.Join(errs...)
	}
	var err error
	s.URLs, s.User, s.Password, err = parseURLs(p, class, urls, source, userInfo)
	errs = append(errs, err)
	switch {
	case bearer != "" && s.BearerToken == "":
		errs = append(errs, fmt.Errorf("%sbearer.auth.credentials.source=STATIC_TOKEN needs %sbearer.auth.token; set it (e.g. ${env:REGISTRY_TOKEN})", p, p))
	case bearer == "" && s.BearerToken != "":
		errs = append(errs, fmt.Errorf("%sbearer.auth.token is set but %sbearer.auth.credentials.source is not; set it to STATIC_TOKEN", p, p))
	case bearer != "" && s.User != "":
		errs = append(errs, fmt.Errorf("%s: both basic auth (user info) and a bearer token are set; keep one", p+"bearer.auth.credentials.source"))
	}
	if s.UseLatest && s.AutoRegister {
		errs = append(errs, fmt.Errorf("%suse.latest.version=true needs %sauto.register.schemas=false (Confluent's serializer registers first and never reads the latest version then); set it", p, p))
	}
	return s, errors.Join(errs...)
}

// parseStrategy maps a declared strategy value to its Strategy.
func parseStrategy(v string) Strategy {
	switch {
	case strings.HasSuffix(v, "TopicRecordNameStrategy"):
		return TopicRecordName
	case strings.HasSuffix(v, "RecordNameStrategy"):
		return RecordName
	}
	return TopicName
}

// parseURLs reads schema.registry.url and the basic auth it implies:
// USER_INFO takes user:password from basic.auth.user.info; URL (the
// default) from the first URL's user info, as Confluent's
// UrlBasicAuthCredentialProvider. The URLs returned hold no user info.
func parseURLs(p, class, list, source, userInfo string) (urls []string, user, password string, _ error) {
	key := p + "schema.registry.url"
	if strings.TrimSpace(list) == "" {
		return nil, "", "", fmt.Errorf("%s is required by %s; set it to the registry's URL, e.g. http://127.0.0.1:8081", key, class)
	}
	var fromURL *url.Userinfo
	for _, raw := range textlist.Split(list) {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, "", "", fmt.Errorf("%s: %q is not an http:// or https:// URL", key, redactURL(raw))
		}
		if u.User != nil && fromURL == nil {
			fromURL = u.User
		}
		u.User = nil
		urls = append(urls, strings.TrimSuffix(u.String(), "/"))
	}
	if len(urls) == 0 {
		// Commas and blanks only: the list splits into nothing, and a
		// client without a URL has nothing to call.
		return nil, "", "", fmt.Errorf("%s=%q lists no URL, only commas or blanks; set it to the registry's URL, or several comma separated, e.g. http://127.0.0.1:8081", key, list)
	}
	switch source {
	case "USER_INFO":
		if userInfo == "" {
			return nil, "", "", fmt.Errorf("%sbasic.auth.credentials.source=USER_INFO needs %sbasic.auth.user.info (user:password); set it (e.g. ${env:REGISTRY_USER_INFO})", p, p)
		}
		u, pw, ok := strings.Cut(userInfo, ":")
		if !ok || u == "" {
			return nil, "", "", fmt.Errorf("%sbasic.auth.user.info: want user:password", p)
		}
		return urls, u, pw, nil
	default: // URL
		if userInfo != "" {
			return nil, "", "", fmt.Errorf("%sbasic.auth.user.info is set but %sbasic.auth.credentials.source is URL (the default); set it to USER_INFO", p, p)
		}
		if fromURL != nil {
			pw, _ := fromURL.Password()
			return urls, fromURL.Username(), pw, nil
		}
	}
	return urls, "", "", nil
}

// redactURL drops a URL's user info, for errors.
func redactURL(raw string) string {
	if at := strings.LastIndex(raw, "@"); at >= 0 {
		if scheme := strings.Index(raw, "://"); scheme >= 0 && scheme < at {
			return raw[:scheme+3] + "…@" + raw[at+1:]
		}
	}
	return raw
}
