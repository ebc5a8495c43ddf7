package registry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/outboxrelay/outboxrelay/internal/certerr"
	"github.com/outboxrelay/outboxrelay/internal/connectschema"
	"github.com/outboxrelay/outboxrelay/internal/terminal"
	"github.com/outboxrelay/outboxrelay/relay"
	"github.com/outboxrelay/outboxrelay/router"
)

// Codec is one compiled schema of a format: the text registered, the name
// RecordNameStrategy uses, and the encoder of payloads.
type Codec interface {
	Schema() string
	Name() string
	// Append appends the encoded body of payload, the JSON JsonConverter
	// writes for the schema the codec was compiled from.
	Append(dst, payload []byte) ([]byte, error)
}

// Format is one registry format: its schemaType ("AVRO" or "JSON") and
// the compiler of Connect schemas into its codecs.
type Format struct {
	SchemaType string
	Compile    func(*connectschema.Schema) (Codec, error)
}

// maxSchemas bounds each side's cache of compiled schemas and subject
// ids. A full cache is dropped whole: compiling again is cheap, and
// registering a schema the subject holds already returns its id and
// adds no version.
const maxSchemas = 1000

// Converter turns the router's JsonConverter records into the Confluent
// wire format (relay.Converter): magic byte 0, the schema id (4 bytes,
// big-endian), the body the format's codec encodes. One goroutine calls
// it (the session's).
type Converter struct {
	key, value *side // nil: that half is not a registry converter's
	buf        []byte
}

// side converts one half (key or value) of records.
type side struct {
	cfg    Side
	format Format
	client *Client
	// schemas maps a Connect schema's JSON to its compiled codec (or the
	// compile error, which makes the record poison).
	schemas map[string]*compiled
	// last and lastSchema are the previous record's compiled schema and
	// its Connect schema's JSON.
	last       *compiled
	lastSchema []byte
}

type compiled struct {
	codec Codec
	err   error
	// ids maps what the subject depends on besides the side and the
	// schema, the topic ("" with RecordNameStrategy: the subject is the
	// schema's name), to the schema's id under that subject: keyed so, a
	// known id needs no subject's name built per record, and one subject
	// is asked once (Confluent's caches are keyed by subject).
	ids map[string]knownID
}

// knownID is a schema id known for a subject. With use.latest.version
// and latest.cache.ttl.sec ≥ 0 it is read again once expires passed
// (Confluent's latestVersions cache: expireAfterWrite); zero expires:
// kept (auto.register.schemas and lookups: an id never changes).
type knownID struct {
	id      int
	subject string
	expires time.Time
}

// NewConverter returns the converter of cfg's registry sides, formats
// mapping a converter class to its Format. It returns nil when neither
// key.converter nor value.converter is a registry converter.
func NewConverter(cfg Config, formats map[string]Format) (*Converter, error) {
	c := &Converter{}
	var err error
	if c.key, err = newSide(cfg.Key, formats); err != nil {
		return nil, err
	}
	if c.value, err = newSide(cfg.Value, formats); err != nil {
		return nil, err
	}
	if c.key == nil && c.value == nil {
		return nil, nil
	}
	return c, nil
}

func newSide(s Side, formats map[string]Format) (*side, error) {
	if s.Class == "" {
		return nil, nil
	}
	f, ok := formats[s.Class]
	if !ok || f.Compile == nil {
		return nil, fmt.Errorf("%s: %s is not built into this binary (internal/setup Formats)", strings.TrimSuffix(s.Prefix(), "."), s.Class)
	}
	client, err := NewClient(s)
	if err != nil {
		return nil, err
	}
	return &side{cfg: s, format: f, client: client, schemas: map[string]*compiled{}}, nil
}

// Convert rewrites rec's key and value (relay.Converter). The bytes set
// point into the converter's buffer: valid until the next Convert call.
func (c *Converter) Convert(ctx context.Context, rec *router.Record) error {
	c.buf = c.buf[:0]
	key, value := rec.Key, rec.Value
	var err error
	if c.key != nil && key != nil {
		if key, err = c.key.convert(ctx, c, rec, key); err != nil {
			return err
		}
	}
	if c.value != nil && value != nil {
		if value, err = c.value.convert(ctx, c, rec, value); err != nil {
			return err
		}
	}
	rec.Key, rec.Value = key, value
	return nil
}

// cut returns the bytes appended to c.buf since start, capped so that a
// later append never overwrites them.
func (c *Converter) cut(start int) []byte {
	return c.buf[start:len(c.buf):len(c.buf)]
}

// convert turns one JsonConverter envelope into the wire format. A null
// payload is a null key or value: Confluent's serializers write null for
// a null object (AbstractKafkaAvroSerializer.serializeImpl).
func (s *side) convert(ctx context.Context, c *Converter, rec *router.Record, envelope []byte) ([]byte, error) {
	comp, payload, err := s.prepare(rec, envelope)
	if comp == nil {
		return nil, err
	}
	name := comp.codec.Name()
	if name == "" && s.cfg.Strategy != TopicName {
		return nil, s.poison(rec, "", s.unnamed())
	}
	idKey := rec.Topic
	if s.cfg.Strategy == RecordName {
		idKey = "" // the subject is the schema's name, whatever the topic
	}
	known, ok := comp.ids[idKey]
	if ok && !known.expires.IsZero() && !time.Now().Before(known.expires) {
		ok = false
	}
	if !ok {
		subject := s.cfg.Strategy.Subject(rec.Topic, s.cfg.IsKey, name)
		id, err := s.schemaID(ctx, subject, comp.codec)
		if err != nil {
			return nil, s.classify(rec, subject, err)
		}
		known = knownID{id: id, subject: subject}
		if s.cfg.UseLatest && s.cfg.LatestTTL >= 0 {
			known.expires = time.Now().Add(s.cfg.LatestTTL)
		}
		comp.ids[idKey] = known
	}
	start := len(c.buf)
	c.buf = append(c.buf, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(c.buf[start+1:], uint32(known.id))
	if c.buf, err = comp.codec.Append(c.buf, payload); err != nil {
		c.buf = c.buf[:start]
		return nil, s.poison(rec, known.subject, fmt.Errorf("encoding the payload: %w", err))
	}
	return c.cut(start), nil
}

// prepare splits a JsonConverter envelope and returns its schema's
// compiled codec and the payload; a nil codec with a nil error is a null
// payload. Errors are poison.
func (s *side) prepare(rec *router.Record, envelope []byte) (*compiled, []byte, error) {
	comp, payload := s.last, []byte(nil)
	ok := comp != nil
	if ok {
		// Records of one schema come in runs: the previous record's
		// schema bytes, compared, spare the scan.
		payload, ok = connectschema.SplitKnown(envelope, s.lastSchema)
	}
	if !ok {
		schema, p, err := connectschema.SplitEnvelope(envelope)
		if err != nil {
			return nil, nil, s.poison(rec, "", err)
		}
		comp, payload = s.compile(schema), p
		s.last, s.lastSchema = comp, append(s.lastSchema[:0], schema...)
	}
	if string(payload) == "null" {
		return nil, nil, nil
	}
	if comp.err != nil {
		return nil, nil, s.poison(rec, "", comp.err)
	}
	return comp, payload, nil
}

// compile returns the cached codec of a Connect schema's JSON, compiling
// it on first sight.
func (s *side) compile(schema []byte) *compiled {
	if comp, ok := s.schemas[string(schema)]; ok {
		return comp
	}
	if len(s.schemas) >= maxSchemas {
		clear(s.schemas)
	}
	comp := &compiled{ids: map[string]knownID{}}
	parsed, err := connectschema.Parse(schema)
	if err == nil {
		comp.codec, err = s.format.Compile(parsed)
	}
	if err != nil {
		comp.err = fmt.Errorf("converting the Connect schema: %w", err)
	}
	s.schemas[string(schema)] = comp
	return comp
}

// schemaID asks the registry for the id of codec's schema under subject,
// as Confluent's serializer does (AbstractKafkaAvroSerializer.serializeImpl):
// auto.register.schemas registers it; otherwise use.latest.version takes
// the subject's latest version, else the schema is looked up.
func (s *side) schemaID(ctx context.Context, subject string, codec Codec) (int, error) {
	st := s.format.SchemaType
	switch {
	case s.cfg.AutoRegister:
		return s.client.Register(ctx, subject, st, codec.Schema())
	case s.cfg.UseLatest:
		latest, err := s.client.Latest(ctx, subject)
		if err != nil {
			return 0, err
		}
		// The body is encoded with our schema: the latest version must be
		// it. The registry tells by looking ours up.
		own, err := s.client.Lookup(ctx, subject, st, codec.Schema())
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusNotFound || err == nil && own.ID != latest.ID {
			return 0, &mismatchError{subject: subject, latest: latest.Version}
		}
		return latest.ID, err
	}
	own, err := s.client.Lookup(ctx, subject, st, codec.Schema())
	return own.ID, err
}

// mismatchError: use.latest.version with a latest schema that is not the
// record's own.
type mismatchError struct {
	subject string
	latest  int
}

func (e *mismatchError) Error() string {
	return fmt.Sprintf("use.latest.version: the latest schema of subject %q (version %d) is not the record's schema; outboxrelay encodes with the record's own schema only: register it, or set use.latest.version=false", e.subject, e.latest)
}

// unnamed is why a record whose schema has no name (an Avro schema other
// than a record; a JSON Schema without a title: a string payload, a plain
// string key) has no subject under RecordNameStrategy or
// TopicRecordNameStrategy. Confluent's strategies refuse it alike
// (RecordNameStrategy.getRecordName: "In configuration
// value.subject.name.strategy = …, the message value must only be a record
// schema"), and Kafka Connect fails the record in the converter stage.
func (s *side) unnamed() error {
	half := "value"
	if s.cfg.IsKey {
		half = "key"
	}
	key := s.cfg.Prefix() + half + ".subject.name.strategy"
	return fmt.Errorf("%s=%s needs a schema with a name (a record), and this %s's schema has none; set %s=TopicNameStrategy (subject <topic>-%s), or send only %ss whose schema is a named record",
		key, s.cfg.Strategy, half, key, half, half)
}

// poison is a record whose schema or payload the format refuses.
func (s *side) poison(rec *router.Record, subject string, err error) error {
	half := "value"
	if s.cfg.IsKey {
		half = "key"
	}
	where := ""
	if subject != "" {
		where = fmt.Sprintf(" (subject %q)", subject)
	}
	return &relay.ConvertError{Stage: s.stage(), Err: fmt.Errorf("%s: the %s of event %s for topic %s%s: %w", s.cfg.Class, half, rec.EventID, rec.Topic, where, err)}
}

func (s *side) stage() string {
	if s.cfg.IsKey {
		return "KEY_CONVERTER"
	}
	return "VALUE_CONVERTER"
}

// classify turns a registry failure into what the relay does with it:
// refused credentials stop with the fix; an unreachable or failing
// registry is retried; a schema the registry refuses with its own error
// (409 incompatible, 422xx invalid, 404 40401/40403 not registered)
// makes the record poison; any other answer (no registry error code: not
// a registry at that URL; a schema id out of range from every URL) stops.
func (s *side) classify(rec *router.Record, subject string, err error) error {
	var e *Error
	var ne *NetError
	var mm *mismatchError
	var ae *AnswerError
	switch {
	case errors.As(err, &mm):
		return s.poison(rec, subject, err)
	case errors.As(err, &ae):
		// Every URL answered, and none with a usable id: the registry is
		// broken, not the record (not poison), and no retry makes it well.
		return terminal.Final(fmt.Errorf("%w; no record was written with it: fix the registry, or point %sschema.registry.url at one that allocates ids as Confluent's does", err, s.cfg.Prefix()))
	case errors.As(err, &e) && e.Unauthorized():
		return terminal.Final(fmt.Errorf("%w; check %sschema.registry.url's user info, %sbasic.auth.credentials.source / basic.auth.user.info or %sbearer.auth.token, and the principal's permissions on subject %q",
			err, s.cfg.Prefix(), s.cfg.Prefix(), s.cfg.Prefix(), subject))
	case errors.As(err, &e) && e.Unavailable():
		return fmt.Errorf("%w: %w", relay.ErrConverterUnavailable, err)
	case errors.As(err, &e) && e.Code == 0:
		// Not the registry's JSON error: the URL reaches something else
		// (a proxy, another service). Every record would fail alike.
		return terminal.Final(fmt.Errorf("%w; the answer is not a schema registry's: check %sschema.registry.url", err, s.cfg.Prefix()))
	case errors.As(err, &e):
		return s.poison(rec, subject, fmt.Errorf("the registry refused the schema: %w", err))
	case errors.As(err, &ne) && certerr.Failed(err):
		return terminal.Final(fmt.Errorf("%w; set %sschema.registry.ssl.truststore.location to the PEM file of the CA that signed the registry's certificate", err, s.cfg.Prefix()))
	case errors.As(err, &ne):
		return fmt.Errorf("%w: %w", relay.ErrConverterUnavailable, err)
	}
	return err
}
