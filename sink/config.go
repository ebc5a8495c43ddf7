package sink

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"

	"github.com/outboxrelay/outboxrelay/internal/config"
	"github.com/outboxrelay/outboxrelay/internal/confkey"
	"github.com/outboxrelay/outboxrelay/internal/textlist"
)

// Defaults. Where they differ from the Java producer's, the field doc says why.
const (
	DefaultClientID        = "outboxrelay"
	DefaultLinger          = 5 * time.Millisecond
	DefaultBatchBytes      = 256 << 10
	DefaultMaxRequestSize  = 1 << 20
	DefaultBufferMemory    = 32 << 20
	DefaultRequestTimeout  = 30 * time.Second
	DefaultRetryBackoff    = 100 * time.Millisecond
	DefaultRetryBackoffMax = time.Second
	DefaultMetadataMaxAge  = 5 * time.Minute
)

// Config is the Kafka side of outboxrelay. Build it with ParseConfig from the
// Kafka keys users already write for Kafka Connect, or fill it in code and
// call Validate, which applies the defaults and checks cross-field rules.
type Config struct {
	// Brokers: bootstrap.servers, comma separated host:port. Required.
	Brokers []string
	// ClientID: client.id. Default "outboxrelay".
	ClientID string

	// Linger: linger.ms. How long a partition waits for more records before
	// sending a batch that is not full. Default 5 ms (Kafka 4's default).
	Linger time.Duration
	// BatchBytes: batch.size, the most record bytes in one produce request
	// for one partition. Default 256 KiB, not Java's 16 KiB: outboxrelay keeps
	// a single request in flight per partition (that is what keeps per-key
	// order across retries), so one batch must carry what Java spreads over
	// five in-flight requests.
	BatchBytes int
	// Compression: compression.type: none (default), gzip, snappy, lz4, zstd.
	Compression kafka.Compression
	// MaxRequestSize: max.request.size. Default 1048576. A record bigger than
	// this is rejected before sending (ErrRecordTooLarge); batches never
	// exceed it.
	MaxRequestSize int
	// BufferMemory: buffer.memory. The most bytes of records accepted by Send
	// and not yet acknowledged; Send blocks beyond it. It is a guard only: the
	// relay's own in-flight budget (invariant 5) should be smaller. Default
	// 32 MiB, as in Java.
	BufferMemory int64
	// RequestTimeout: request.timeout.ms. Default 30 s. A request that times
	// out is retried (the broker may have written it: at-least-once).
	RequestTimeout time.Duration
	// RetryBackoff, RetryBackoffMax: retry.backoff.ms (100 ms) and
	// retry.backoff.max.ms (1 s). Transient failures are retried forever with
	// this capped exponential backoff; Java's `retries` has no equivalent.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
	// DisableIdempotence: enable.idempotence=false. By default the producer
	// is idempotent, as Java's is since Kafka 3.0: it asks for a producer
	// id (InitProducerId) before its first batch and numbers each
	// partition's records, so a batch resent after a lost answer is kept
	// once by the broker. Disabled, batches carry producer id -1 and such a
	// retry writes the batch twice (in order: at-least-once). Either way
	// one batch per partition is in flight.
	DisableIdempotence bool
	// MetadataMaxAge: metadata.max.age.ms. Partition counts older than this
	// are fetched again before routing. Default 5 min, as in Java.
	MetadataMaxAge time.Duration

	// SecurityProtocol: security.protocol: PLAINTEXT (default), SSL,
	// SASL_PLAINTEXT, SASL_SSL.
	SecurityProtocol string
	// SASLMechanism: sasl.mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.
	SASLMechanism string
	// SASLUsername, SASLPassword: from sasl.jaas.config
	// (`... required username="u" password="p";`). Never logged.
	SASLUsername string
	SASLPassword string
	// TLS files, all PEM. TLSCAFile: ssl.truststore.location with
	// ssl.truststore.type=PEM, or ssl.ca.location. Empty: the system roots.
	// TLSCertFile/TLSKeyFile: ssl.certificate.location / ssl.key.location,
	// or ssl.keystore.location with ssl.keystore.type=PEM (one file holding
	// the certificate chain and an unencrypted private key).
	TLSCAFile   string
	TLSCertFile string
	TLSKeyFile  string
	// TLSSkipHostnameCheck: ssl.endpoint.identification.algorithm set to the
	// empty string, as in Java; the certificate chain is still verified.
	TLSSkipHostnameCheck bool

	// TopicPartitions, TopicReplicationFactor:
	// topic.creation.default.partitions / .replication.factor. With both set
	// (non-zero; -1 = broker default) missing topics are created with them.
	TopicPartitions        int
	TopicReplicationFactor int
	// TopicConfigs: the other topic.creation.default.<name> keys, given
	// as topic configs (cleanup.policy, retention.ms, ...) to every topic
	// the relay creates but the dead-letter topic, as Connect does.
	TopicConfigs map[string]string
	// AllowAutoCreateTopics: allow.auto.create.topics (default true, as in
	// Java). When topic creation is not configured, a missing topic may
	// still be created by the broker's auto.create.topics.enable rule, as it
	// would under Kafka Connect; if the broker does not, sending fails with
	// ErrTopicMissing.
	AllowAutoCreateTopics bool

	// DeadLetterTopic: errors.deadletterqueue.topic.name. Empty: no
	// dead-letter topic. Created when missing with one partition, as
	// Connect does, and DeadLetterReplicationFactor.
	DeadLetterTopic string
	// DeadLetterReplicationFactor:
	// errors.deadletterqueue.topic.replication.factor. Default: the
	// topic.creation replication factor when set, else -1 (broker default;
	// Connect's own default of 3 fails on a single-broker cluster).
	DeadLetterReplicationFactor int
}

// Config keys, as Kafka Connect users write them.
const (
	KeyBootstrapServers      = "bootstrap.servers"
	KeyClientID              = "client.id"
	KeyAcks                  = "acks"
	KeyLinger                = "linger.ms"
	KeyBatchSize             = "batch.size"
	KeyCompression           = "compression.type"
	KeyMaxRequestSize        = "max.request.size"
	KeyBufferMemory          = "buffer.memory"
	KeyRequestTimeout        = "request.timeout.ms"
	KeyRetryBackoff          = "retry.backoff.ms"
	KeyRetryBackoffMax       = "retry.backoff.max.ms"
	KeyMetadataMaxAge        = "metadata.max.age.ms"
	KeyRetries               = "retries"
	KeyIdempotence           = "enable.idempotence"
	KeyMaxInFlight           = "max.in.flight.requests.per.connection"
	KeySecurityProtocol      = "security.protocol"
	KeySASLMechanism         = "sasl.mechanism"
	KeySASLJAASConfig        = "sasl.jaas.config"
	KeyTruststoreLocation    = "ssl.truststore.location"
	KeyTruststoreType        = "ssl.truststore.type"
	KeyTruststorePassword    = "ssl.truststore.password"
	KeyKeystoreLocation      = "ssl.keystore.location"
	KeyKeystoreType          = "ssl.keystore.type"
	KeyKeystorePassword      = "ssl.keystore.password"
	KeyKeyPassword           = "ssl.key.password"
	KeyCALocation            = "ssl.ca.location"
	KeyCertificateLocation   = "ssl.certificate.location"
	KeyKeyLocation           = "ssl.key.location"
	KeyEndpointIdentify      = "ssl.endpoint.identification.algorithm"
	KeyTopicPartitions       = "topic.creation.default.partitions"
	KeyTopicReplication      = "topic.creation.default.replication.factor"
	KeyAllowAutoCreateTopics = "allow.auto.create.topics"
	KeyDLQTopic              = "errors.deadletterqueue.topic.name"
	KeyDLQReplication        = "errors.deadletterqueue.topic.replication.factor"
)

var knownKeys = map[string]bool{
	KeyBootstrapServers: true, KeyClientID: true, KeyAcks: true, KeyLinger: true,
	KeyBatchSize: true, KeyCompression: true, KeyMaxRequestSize: true,
	KeyBufferMemory: true, KeyRequestTimeout: true, KeyRetryBackoff: true,
	KeyRetryBackoffMax: true, KeyMetadataMaxAge: true, KeyRetries: true,
	KeyIdempotence: true, KeyMaxInFlight: true, KeySecurityProtocol: true,
	KeySASLMechanism: true, KeySASLJAASConfig: true, KeyTruststoreLocation: true,
	KeyTruststoreType: true, KeyTruststorePassword: true, KeyKeystoreLocation: true,
	KeyKeystoreType: true, KeyKeystorePassword: true, KeyKeyPassword: true,
	KeyCALocation: true, KeyCertificateLocation: true, KeyKeyLocation: true,
	KeyEndpointIdentify: true, KeyTopicPartitions: true, KeyTopicReplication: true,
	KeyAllowAutoCreateTopics: true, KeyDLQTopic: true, KeyDLQReplication: true,
}

// KnownKey reports whether ParseConfig reads key, so the caller can warn
// about the keys nobody reads.
func KnownKey(key string) bool {
	return knownKeys[key] || strings.HasPrefix(key, topicCreationPrefix) && len(key) > len(topicCreationPrefix)
}

// KnownKeys lists the keys ParseConfig reads by name, sorted; besides them
// it reads every topic.creation.default.<topic config>.
func KnownKeys() []string {
	keys := make([]string, 0, len(knownKeys))
	for k := range knownKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// topicCreationPrefix starts the keys of Connect's default topic creation
// group.
const topicCreationPrefix = "topic.creation.default."

// ParseConfig reads the Kafka keys of kv (keys it does not know are left to
// the caller, see KnownKey) and returns a validated Config. Every error names
// the key and what to write instead; no error contains a password.
func ParseConfig(kv map[string]string) (Config, error) {
	var c Config
	p := parser{kv: kv, v: confkey.Read(kv)}

	if v, ok := p.get(KeyBootstrapServers); ok {
		c.Brokers = textlist.Split(v)
	}
	p.parseProducer(&c)
	c.SecurityProtocol, _ = p.get(KeySecurityProtocol)
	c.SASLMechanism, _ = p.get(KeySASLMechanism)
	if v, ok := p.get(KeySASLJAASConfig); ok {
		u, pw, err := parseJAAS(v)
		if err != nil {
			p.fail(err)
		}
		c.SASLUsername, c.SASLPassword = u, pw
	}
	p.parseTLS(&c)

	p.parseTopicCreation(&c)
	c.DeadLetterTopic, _ = p.get(KeyDLQTopic)
	c.DeadLetterReplicationFactor = p.int(KeyDLQReplication)

	if err := errors.Join(p.errs...); err != nil {
		return Config{}, fmt.Errorf("sink config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseProducer reads the producer's keys: those outboxrelay honours
// (linger, batch and buffer sizes, compression, timeouts, backoff,
// idempotence) and those whose only value it accepts is its own (acks,
// retries, in-flight requests).
func (p *parser) parseProducer(c *Config) {
	c.ClientID = p.text(KeyClientID)
	// acks through its declaration: all or -1, in any case (config.classify
	// accepts ALL, so must the sink).
	if _, err := p.v.Enum(KeyAcks); err != nil {
		p.fail(err)
	}
	// Retries: we retry forever and keep one batch per partition in
	// flight; a setting that asks for something else cannot be honoured,
	// and silently ignoring it would surprise.
	if v, ok := p.get(KeyRetries); ok && v != "2147483647" {
		p.fail(fmt.Errorf("%s=%s: outboxrelay retries transient failures forever so that per-key order holds; remove the key", KeyRetries, v))
	}
	c.DisableIdempotence = !p.bool(KeyIdempotence)
	if _, ok := p.get(KeyMaxInFlight); ok {
		// Any positive value is honoured: we never exceed one per
		// partition, so Java's "at most 5 with enable.idempotence" holds.
		p.int(KeyMaxInFlight)
	}
	c.Linger = p.millis(KeyLinger)
	c.BatchBytes = p.int(KeyBatchSize)
	if v, ok := p.get(KeyCompression); ok {
		comp, err := parseCompression(v)
		if err != nil {
			p.fail(err)
		}
		c.Compression = comp
	}
	c.MaxRequestSize = p.int(KeyMaxRequestSize)
	c.BufferMemory = p.int64(KeyBufferMemory)
	c.RequestTimeout = p.millis(KeyRequestTimeout)
	c.RetryBackoff = p.millis(KeyRetryBackoff)
	c.RetryBackoffMax = p.millis(KeyRetryBackoffMax)
	c.MetadataMaxAge = p.millis(KeyMetadataMaxAge)
}

// parseTopicCreation reads topic.creation.default.* and
// allow.auto.create.topics.
func (p *parser) parseTopicCreation(c *Config) {
	c.TopicPartitions = p.int(KeyTopicPartitions)
	c.TopicReplicationFactor = p.int(KeyTopicReplication)
	for k, v := range p.kv {
		if name, ok := strings.CutPrefix(k, topicCreationPrefix); ok && k != KeyTopicPartitions && k != KeyTopicReplication && name != "" {
			if c.TopicConfigs == nil {
				c.TopicConfigs = map[string]string{}
			}
			c.TopicConfigs[name] = strings.TrimSpace(v)
		}
	}
	c.AllowAutoCreateTopics = p.bool(KeyAllowAutoCreateTopics)
}

func (p *parser) parseTLS(c *Config) {
	if typ, ok := p.get(KeyTruststoreType); ok && !strings.EqualFold(typ, "PEM") {
		p.fail(fmt.Errorf("%s=%s: only PEM trust stores are supported; convert it (keytool -exportcert -rfc) and set %s=PEM, or use %s", KeyTruststoreType, typ, KeyTruststoreType, KeyCALocation))
	}
	if typ, ok := p.get(KeyKeystoreType); ok && !strings.EqualFold(typ, "PEM") {
		p.fail(fmt.Errorf("%s=%s: only PEM key stores are supported; use a PEM file with the certificate chain and an unencrypted key, or %s and %s", KeyKeystoreType, typ, KeyCertificateLocation, KeyKeyLocation))
	}
	// PEM files need no store password; an encrypted private key is not
	// supported (Go's standard library dropped legacy PEM decryption).
	if _, ok := p.get(KeyKeyPassword); ok {
		p.fail(fmt.Errorf("%s is set: encrypted private keys are not supported; decrypt the key (openssl pkey) and remove %s", KeyKeyPassword, KeyKeyPassword))
	}
	p.get(KeyTruststorePassword) // meaningless for PEM trust stores: accepted and ignored
	p.get(KeyKeystorePassword)

	ts, hasTS := p.get(KeyTruststoreLocation)
	ca, hasCA := p.get(KeyCALocation)
	if hasTS && hasCA && ts != ca {
		p.fail(fmt.Errorf("%s and %s name different files; set one", KeyTruststoreLocation, KeyCALocation))
	}
	c.TLSCAFile = ts
	if hasCA {
		c.TLSCAFile = ca
	}
	if ks, ok := p.get(KeyKeystoreLocation); ok {
		c.TLSCertFile, c.TLSKeyFile = ks, ks
	}
	if v, ok := p.get(KeyCertificateLocation); ok {
		c.TLSCertFile = v
	}
	if v, ok := p.get(KeyKeyLocation); ok {
		c.TLSKeyFile = v
	}
	if v, ok := p.get(KeyEndpointIdentify); ok {
		switch strings.ToLower(v) {
		case "":
			c.TLSSkipHostnameCheck = true
		case "https":
		default:
			p.fail(fmt.Errorf("%s=%s: want https (default) or the empty string", KeyEndpointIdentify, v))
		}
	}
}

// Validate applies defaults and checks the rules that span fields.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, fmt.Errorf("%s is required (host:port[,host:port])", KeyBootstrapServers))
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	setDefault(&c.Linger, DefaultLinger)
	setDefault(&c.BatchBytes, DefaultBatchBytes)
	setDefault(&c.MaxRequestSize, DefaultMaxRequestSize)
	setDefault(&c.BufferMemory, DefaultBufferMemory)
	setDefault(&c.RequestTimeout, DefaultRequestTimeout)
	setDefault(&c.RetryBackoff, DefaultRetryBackoff)
	setDefault(&c.RetryBackoffMax, DefaultRetryBackoffMax)
	setDefault(&c.MetadataMaxAge, DefaultMetadataMaxAge)
	if c.Linger < 0 {
		errs = append(errs, fmt.Errorf("%s must not be negative", KeyLinger))
	}
	for _, f := range []struct {
		key string
		v   int64
	}{{KeyBatchSize, int64(c.BatchBytes)}, {KeyMaxRequestSize, int64(c.MaxRequestSize)}, {KeyBufferMemory, c.BufferMemory},
		{KeyRequestTimeout, int64(c.RequestTimeout)}, {KeyRetryBackoff, int64(c.RetryBackoff)}, {KeyRetryBackoffMax, int64(c.RetryBackoffMax)}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", f.key))
		}
	}
	// A record that fits a request must also fit the send buffer, or Send
	// would wait for room that can never exist.
	if int64(c.MaxRequestSize) > c.BufferMemory {
		errs = append(errs, fmt.Errorf("%s (%d) is larger than %s (%d); raise %s", KeyMaxRequestSize, c.MaxRequestSize, KeyBufferMemory, c.BufferMemory, KeyBufferMemory))
	}
	if c.RetryBackoffMax < c.RetryBackoff {
		c.RetryBackoffMax = c.RetryBackoff
	}
	switch c.Compression {
	case 0, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd:
	default:
		errs = append(errs, fmt.Errorf("%s: unknown codec %d", KeyCompression, c.Compression))
	}
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateTopicCreation()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sink config: %w", err)
	}
	return nil
}

func (c *Config) validateSecurity() []error {
	var errs []error
	if c.SecurityProtocol == "" {
		c.SecurityProtocol = "PLAINTEXT"
	}
	c.SecurityProtocol = strings.ToUpper(c.SecurityProtocol)
	useSASL := false
	switch c.SecurityProtocol {
	case "PLAINTEXT", "SSL":
	case "SASL_PLAINTEXT", "SASL_SSL":
		useSASL = true
	default:
		errs = append(errs, fmt.Errorf("%s=%s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", KeySecurityProtocol, c.SecurityProtocol))
	}
	if !useSASL {
		return errs
	}
	if c.SASLMechanism == "" {
		c.SASLMechanism = "GSSAPI" // Java's default, which we then reject with a clear message
	}
	c.SASLMechanism = strings.ToUpper(c.SASLMechanism)
	switch c.SASLMechanism {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		errs = append(errs, fmt.Errorf("%s=%s is not supported with %s=%s: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", KeySASLMechanism, c.SASLMechanism, KeySecurityProtocol, c.SecurityProtocol))
	}
	if c.SASLUsername == "" {
		errs = append(errs, fmt.Errorf("%s=%s needs %s with username=\"…\" password=\"…\"", KeySecurityProtocol, c.SecurityProtocol, KeySASLJAASConfig))
	}
	return errs
}

func (c *Config) validateTopicCreation() []error {
	var errs []error
	for _, f := range []struct {
		key string
		v   int
	}{{KeyTopicPartitions, c.TopicPartitions}, {KeyTopicReplication, c.TopicReplicationFactor}, {KeyDLQReplication, c.DeadLetterReplicationFactor}} {
		if f.v < -1 {
			errs = append(errs, fmt.Errorf("%s=%d: want a positive number or -1 (broker default)", f.key, f.v))
		}
	}
	// Connect creates topics only when both keys are set; one alone is
	// almost certainly a typo, so say so instead of silently not creating.
	if (c.TopicPartitions == 0) != (c.TopicReplicationFactor == 0) {
		errs = append(errs, fmt.Errorf("%s and %s must be set together (-1 = broker default) to create missing topics", KeyTopicPartitions, KeyTopicReplication))
	}
	if c.DeadLetterReplicationFactor == 0 {
		c.DeadLetterReplicationFactor = -1
		if c.TopicReplicationFactor != 0 {
			c.DeadLetterReplicationFactor = c.TopicReplicationFactor
		}
	}
	return errs
}

// createsTopics reports whether missing topics are created with
// TopicPartitions and TopicReplicationFactor.
func (c *Config) createsTopics() bool { return c.TopicPartitions != 0 && c.TopicReplicationFactor != 0 }

// String describes the config with the password redacted.
func (c Config) String() string {
	pw := ""
	if c.SASLPassword != "" {
		pw = "[redacted]"
	}
	return fmt.Sprintf("sink.Config{brokers=%s security=%s sasl=%s user=%q password=%s linger=%s batch.size=%d max.request.size=%d compression=%s}",
		strings.Join(c.Brokers, ","), c.SecurityProtocol, c.SASLMechanism, c.SASLUsername, pw, c.Linger, c.BatchBytes, c.MaxRequestSize, compressionName(c.Compression))
}

// LogValue lets slog print the config without the password.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String(KeyBootstrapServers, strings.Join(c.Brokers, ",")),
		slog.String(KeySecurityProtocol, c.SecurityProtocol),
		slog.Duration(KeyLinger, c.Linger),
		slog.Int(KeyBatchSize, c.BatchBytes),
		slog.Int(KeyMaxRequestSize, c.MaxRequestSize),
		slog.String(KeyCompression, compressionName(c.Compression)),
	}
	if c.SASLMechanism != "" {
		attrs = append(attrs, slog.String(KeySASLMechanism, c.SASLMechanism), slog.String("sasl.username", c.SASLUsername))
	}
	if c.SASLPassword != "" {
		attrs = append(attrs, slog.String("sasl.password", "[redacted]"))
	}
	return slog.GroupValue(attrs...)
}

// transport builds the kafka-go transport (TLS, SASL) the producer and its
// admin calls share. It reads the PEM files, so a missing file fails here,
// naming its key.
func (c *Config) transport() (*kafka.Transport, error) {
	t := &kafka.Transport{ClientID: c.ClientID, DialTimeout: 10 * time.Second}
	if c.SecurityProtocol == "SSL" || c.SecurityProtocol == "SASL_SSL" {
		tc, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		t.TLS = tc
	}
	if c.SecurityProtocol == "SASL_PLAINTEXT" || c.SecurityProtocol == "SASL_SSL" {
		t.SASL = c.saslMechanism()
	}
	return t, nil
}

func (c *Config) saslMechanism() sasl.Mechanism {
	switch c.SASLMechanism {
	case "SCRAM-SHA-256":
		return newSCRAM(scramSHA256, c.SASLUsername, c.SASLPassword)
	case "SCRAM-SHA-512":
		return newSCRAM(scramSHA512, c.SASLUsername, c.SASLPassword)
	default:
		return plain.Mechanism{Username: c.SASLUsername, Password: c.SASLPassword}
	}
}

// maxTLSFile is the most bytes a PEM file of the TLS keys may hold: a CA
// bundle or a certificate chain is a few kilobytes (the system's whole
// bundle about 200 KiB).
const maxTLSFile = 1 << 20

// readTLSFile reads a TLS file through config.ReadFile: a regular file of
// at most maxTLSFile bytes, so that /dev/zero cannot fill memory nor a
// FIFO block the start. The error names key and the file.
func readTLSFile(key, path string) ([]byte, error) {
	b, err := config.ReadFile(path, maxTLSFile, "a TLS file ("+key+")")
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	return b, nil
}

// caKey is the key that named c.TLSCAFile, for errors.
const caKey = KeyTruststoreLocation + " / " + KeyCALocation

func (c *Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSCAFile != "" {
		pem, err := readTLSFile(caKey, c.TLSCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s=%s: no PEM certificate found in the file", KeyTruststoreLocation, c.TLSCAFile)
		}
		tc.RootCAs = pool
	}
	if c.TLSCertFile != "" || c.TLSKeyFile != "" {
		cert, err := c.clientCertificate()
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if c.TLSSkipHostnameCheck {
		// Java's empty ssl.endpoint.identification.algorithm still checks
		// the chain, only not the host name: do the same by hand.
		tc.InsecureSkipVerify = true
		roots := tc.RootCAs
		tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChainOnly(raw, roots)
		}
	}
	return tc, nil
}

// clientCertificate reads the client certificate chain and its key
// (ssl.certificate.location and ssl.key.location, or both from
// ssl.keystore.location), each through readTLSFile.
func (c *Config) clientCertificate() (tls.Certificate, error) {
	const pairKeys = KeyCertificateLocation + " / " + KeyKeyLocation
	if c.TLSCertFile == "" || c.TLSKeyFile == "" {
		return tls.Certificate{}, fmt.Errorf("loading client certificate (%s): set both, or %s to one PEM file holding both", pairKeys, KeyKeystoreLocation)
	}
	certPEM, err := readTLSFile(KeyCertificateLocation+" / "+KeyKeystoreLocation, c.TLSCertFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM := certPEM
	if c.TLSKeyFile != c.TLSCertFile {
		if keyPEM, err = readTLSFile(KeyKeyLocation+" / "+KeyKeystoreLocation, c.TLSKeyFile); err != nil {
			return tls.Certificate{}, err
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading client certificate (%s): %s, %s: %w", pairKeys, c.TLSCertFile, c.TLSKeyFile, err)
	}
	return cert, nil
}

func verifyChainOnly(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("tls: broker sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("tls: parsing broker certificate: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// parseJAAS extracts username and password from a sasl.jaas.config value
// such as `org.apache.kafka.common.security.scram.ScramLoginModule required
// username="u" password="p";`. Errors never quote the value: it holds the
// password.
func parseJAAS(v string) (user, password string, err error) {
	v = strings.TrimSpace(v)
	mod, _, _ := strings.Cut(v, " ")
	switch {
	case strings.HasSuffix(mod, "PlainLoginModule"), strings.HasSuffix(mod, "ScramLoginModule"):
	default:
		return "", "", fmt.Errorf("%s: login module %q is not supported; use PlainLoginModule or ScramLoginModule", KeySASLJAASConfig, mod)
	}
	// One parser: the scrubber reads the password with it too, so the
	// password sent is the one scrubbed.
	user, password = config.JAASOption(v, "username"), config.JAASOption(v, "password")
	if user == "" || password == "" {
		return "", "", fmt.Errorf("%s: want %s required username=\"…\" password=\"…\"; (username or password missing)", KeySASLJAASConfig, mod)
	}
	return user, password, nil
}

func parseCompression(v string) (kafka.Compression, error) {
	switch strings.ToLower(v) {
	case "none", "":
		return 0, nil
	case "gzip":
		return kafka.Gzip, nil
	case "snappy":
		return kafka.Snappy, nil
	case "lz4":
		return kafka.Lz4, nil
	case "zstd":
		return kafka.Zstd, nil
	}
	return 0, fmt.Errorf("%s=%s: want none, gzip, snappy, lz4 or zstd", KeyCompression, v)
}

func compressionName(c kafka.Compression) string {
	if c == 0 {
		return "none"
	}
	return c.String()
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// parser collects every error of a key map so a user fixes them all at
// once. Typed keys are read through their declarations (internal/confkey),
// which give the defaults and ranges.
type parser struct {
	kv   map[string]string
	v    confkey.Values
	errs []error
}

func (p *parser) get(key string) (string, bool) {
	v, ok := p.kv[key]
	return strings.TrimSpace(v), ok
}

func (p *parser) fail(err error) { p.errs = append(p.errs, err) }

func (p *parser) text(key string) string {
	s, err := p.v.Text(key)
	if err != nil {
		p.fail(err)
	}
	return s
}

func (p *parser) bool(key string) bool {
	b, err := p.v.Bool(key)
	if err != nil {
		p.fail(err)
	}
	return b
}

func (p *parser) int64(key string) int64 {
	n, err := p.v.Int(key)
	if err != nil {
		p.fail(err)
	}
	return n
}

func (p *parser) int(key string) int { return int(p.int64(key)) }

func (p *parser) millis(key string) time.Duration {
	d, err := p.v.Millis(key)
	if err != nil {
		p.fail(err)
		return 0
	}
	if d == 0 && key == KeyLinger {
		// linger.ms=0 means "send at once"; keep it distinct from unset.
		return time.Nanosecond
	}
	return d
}
