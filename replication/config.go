package replication

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/internal/confkey"
	"github.com/outboxrelay/outboxrelay/internal/msgprefix"
	"github.com/outboxrelay/outboxrelay/internal/rawconn"
	"github.com/outboxrelay/outboxrelay/internal/textlist"
)

// Snapshot modes (connector key snapshot.mode).
const (
	SnapshotInitial     = "initial"      // emit existing rows once, when the slot is new
	SnapshotNoData      = "no_data"      // stream only; aliases schema_only, never
	SnapshotInitialOnly = "initial_only" // emit existing rows, then stop
	SnapshotWhenNeeded  = "when_needed"  // like initial: rows are read when the slot is created
)

// Publication auto-create modes (connector key publication.autocreate.mode).
const (
	PublicationDisabled  = "disabled"
	PublicationFiltered  = "filtered"
	PublicationAllTables = "all_tables"
	PublicationNoTables  = "no_tables"
)

// Config is the PostgreSQL side of a Debezium PostgreSQL connector config.
// Build it with ParseConfig; every field's doc names its connector key and
// default.
type Config struct {
	// Host is database.hostname (required): one host, or a comma-separated
	// list tried in order for a read-write server, as libpq does with
	// target_session_attrs=read-write, so that after a failover the relay
	// finds the new primary. Port is database.port, default 5432: one
	// port for every host, or one per host.
	Host        string
	Port        int    // the first host's port
	Ports       []int  // one per host
	User        string // database.user (required)
	Password    string // database.password; never logged
	DBName      string // database.dbname (required)
	SSLMode     string // database.sslmode, default prefer (libpq modes)
	SSLRootCert string // database.sslrootcert
	SSLCert     string // database.sslcert
	SSLKey      string // database.sslkey
	SSLPassword string // database.sslpassword: of an encrypted database.sslkey

	Slot           string // slot.name, default debezium
	DropSlotOnStop bool   // slot.drop.on.stop, default false
	// SlotFailover (slot.failover, default false; PostgreSQL 17+) creates
	// the slot with failover enabled, and enables it on an existing slot,
	// so that standbys with sync_replication_slots = on keep a copy of it
	// that survives a failover.
	SlotFailover bool
	// SlotMaxRetries and SlotRetryDelay (slot.max.retries, default 6;
	// slot.retry.delay.ms, default 10000, as Debezium) bound the wait for a
	// slot that another connection still holds, e.g. the walsender of a
	// relay that just died, before the relay gives up with an error.
	SlotMaxRetries int
	SlotRetryDelay time.Duration

	Publication string // publication.name, default dbz_publication
	AutoCreate  string // publication.autocreate.mode, default all_tables

	// Tables is table.include.list: regexes matched against the whole
	// "schema.table" name, as Debezium does.
	Tables     []*regexp.Regexp
	TablesText string

	SnapshotMode string // snapshot.mode, default initial

	// Messages: logical decoding messages are routed (the router's chain
	// has DecodeLogicalDecodingMessageContent; setup sets it). Only then
	// does START_REPLICATION ask pgoutput for them (PostgreSQL 14+).
	Messages bool
	// MessagesOnly is outbox.messages.only (outboxrelay's own, default
	// false): the events are only logical decoding messages, so
	// table.include.list must match no table. Without it a list that
	// matches nothing stays a start-up error (a typo, or the table not
	// created yet), messages or not.
	MessagesOnly bool
	// MessagePrefixes are message.prefix.include.list and
	// message.prefix.exclude.list, compiled from the two texts: regexes
	// matched case-insensitively against the whole prefix, as Debezium's
	// Predicates do. At most one is set.
	MessagePrefixes                        msgprefix.Filter
	MessageIncludeText, MessageExcludeText string

	HeartbeatInterval time.Duration // heartbeat.interval.ms, default 0 (off)
	HeartbeatQuery    string        // heartbeat.action.query
	// HeartbeatTopic is <topic.heartbeat.prefix>.<topic.prefix>, Debezium's
	// heartbeat topic (prefix default __debezium-heartbeat).
	HeartbeatTopic string
	StatusInterval time.Duration // status.update.interval.ms, default 10 s
	// MaxRetries (errors.max.retries, default -1: forever) bounds the
	// reconnects after transient failures in a row; RetryWait
	// (retriable.restart.connector.wait.ms, default 10 s) caps the
	// exponential backoff between them.
	MaxRetries  int
	RetryWait   time.Duration
	TopicPrefix string // topic.prefix (required)
}

// KeyMessagesOnly is outbox.messages.only (Config.MessagesOnly).
const KeyMessagesOnly = "outbox.messages.only"

// ParseConfig reads the replication keys of a connector config map
// through their declarations (internal/confkey), which give the defaults
// and ranges. Keys that belong to other components are ignored here;
// unknown keys are reported by the caller, which sees the whole map.
func ParseConfig(m map[string]string) (Config, error) {
	r := keyReader{v: confkey.Read(m)}
	c := Config{
		Host:               r.text("database.hostname"),
		User:               r.text("database.user"),
		Password:           m["database.password"],
		DBName:             r.text("database.dbname"),
		SSLMode:            strings.ToLower(r.text("database.sslmode")),
		SSLRootCert:        r.text("database.sslrootcert"),
		SSLCert:            r.text("database.sslcert"),
		SSLKey:             r.text("database.sslkey"),
		SSLPassword:        m["database.sslpassword"],
		Slot:               r.text("slot.name"),
		Publication:        r.text("publication.name"),
		AutoCreate:         strings.ToLower(r.text("publication.autocreate.mode")),
		TablesText:         m["table.include.list"],
		MessageIncludeText: m["message.prefix.include.list"],
		MessageExcludeText: m["message.prefix.exclude.list"],
		SnapshotMode:       strings.ToLower(r.text("snapshot.mode")),
		HeartbeatQuery:     m["heartbeat.action.query"],
		TopicPrefix:        m["topic.prefix"],
	}
	c.HeartbeatTopic = r.text("topic.heartbeat.prefix") + "." + c.TopicPrefix
	c.DropSlotOnStop = r.bool("slot.drop.on.stop")
	c.MessagesOnly = r.bool(KeyMessagesOnly)
	c.SlotFailover = r.bool("slot.failover")
	c.SlotMaxRetries = int(r.int("slot.max.retries"))
	c.SlotRetryDelay = r.millis("slot.retry.delay.ms")
	c.HeartbeatInterval = r.millis("heartbeat.interval.ms")
	c.StatusInterval = r.millis("status.update.interval.ms")
	c.MaxRetries = int(r.int("errors.max.retries"))
	c.RetryWait = r.millis("retriable.restart.connector.wait.ms")
	errs := r.errs
	var err error
	if c.Ports, err = portsKey(r.text("database.port"), len(splitHosts(c.Host))); err != nil {
		errs = append(errs, err)
	} else {
		c.Port = c.Ports[0]
	}
	errs = append(errs, c.parseTables()...)
	if err := c.parsePrefixLists(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	return c, c.Validate()
}

// keyReader reads keys through their declarations, collecting the errors
// so that all are reported at once.
type keyReader struct {
	v    confkey.Values
	errs []error
}

func (r *keyReader) add(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func (r *keyReader) text(key string) string {
	s, err := r.v.Text(key)
	r.add(err)
	return s
}

func (r *keyReader) bool(key string) bool {
	b, err := r.v.Bool(key)
	r.add(err)
	return b
}

func (r *keyReader) int(key string) int64 {
	n, err := r.v.Int(key)
	r.add(err)
	return n
}

func (r *keyReader) millis(key string) time.Duration {
	d, err := r.v.Millis(key)
	r.add(err)
	return d
}

// parseTables compiles table.include.list (split as Debezium's
// RegExSplitter): regexes matched against the whole schema.table.
func (c *Config) parseTables() []error {
	tables, err := textlist.SplitRegex(c.TablesText)
	if err != nil {
		return []error{fmt.Errorf("table.include.list: %v", err)}
	}
	var errs []error
	for _, p := range tables {
		re, err := regexp.Compile(`^(?:` + p + `)$`)
		if err != nil {
			errs = append(errs, fmt.Errorf("table.include.list: %q is not a valid regular expression: %v; write schema.table names, e.g. public.outbox", p, err))
			continue
		}
		c.Tables = append(c.Tables, re)
	}
	return errs
}

// parsePrefixLists compiles message.prefix.include.list and
// message.prefix.exclude.list (internal/msgprefix).
func (c *Config) parsePrefixLists() error {
	var err error
	c.MessagePrefixes, err = msgprefix.Parse(c.MessageIncludeText, c.MessageExcludeText)
	return err
}

// IncludesMessage reports whether a logical decoding message with this
// prefix is routed: messages are on, and the prefix is in the include
// list (when set) and not in the exclude list.
func (c *Config) IncludesMessage(prefix string) bool {
	return c.Messages && c.MessagePrefixes.Includes(prefix)
}

// Validate checks required keys and cross-field rules, naming the key and
// what to write instead.
func (c *Config) Validate() error {
	var errs []error
	req := func(v, key, example string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required; e.g. \"%s\": %q", key, key, example))
		}
	}
	req(c.Host, "database.hostname", "127.0.0.1")
	req(c.User, "database.user", "debezium")
	req(c.DBName, "database.dbname", "order_db")
	req(c.TopicPrefix, "topic.prefix", "order_db")
	// Without a table the relay would publish nothing and still move the
	// slot: a silent no-op that looks healthy. Debezium would capture every
	// table; outboxrelay routes outbox tables only, so it must be told which.
	if len(c.Tables) == 0 && c.TablesText == "" {
		errs = append(errs, errors.New(`table.include.list is required: name the outbox table(s), e.g. "table.include.list": "public.outbox"`))
	}
	switch c.SnapshotMode {
	case "schema_only", "never":
		c.SnapshotMode = SnapshotNoData
	case SnapshotInitial, SnapshotNoData, SnapshotInitialOnly, SnapshotWhenNeeded:
	case "always":
		// Debezium's always re-reads the table at every start: for an
		// outbox that publishes every event ever written again each time.
		errs = append(errs, fmt.Errorf("snapshot.mode always is not supported: it would publish every outbox row again at each start; use initial (existing rows once, when the slot is created), initial_only or no_data"))
	default:
		errs = append(errs, fmt.Errorf("snapshot.mode %q is not supported; use initial, no_data (alias schema_only, never), initial_only or when_needed", c.SnapshotMode))
	}
	switch c.AutoCreate {
	case PublicationDisabled, PublicationFiltered, PublicationAllTables, PublicationNoTables:
	default:
		errs = append(errs, fmt.Errorf("publication.autocreate.mode %q is not supported; use disabled, filtered, all_tables or no_tables", c.AutoCreate))
	}
	switch c.SSLMode {
	case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
	default:
		errs = append(errs, fmt.Errorf("database.sslmode %q is not a libpq mode; use disable, allow, prefer, require, verify-ca or verify-full", c.SSLMode))
	}
	if !validSlotName(c.Slot) {
		errs = append(errs, fmt.Errorf("slot.name %q is not a valid replication slot name: use lower-case letters, digits and underscores, at most 63", c.Slot))
	}
	if c.SlotMaxRetries < 0 || c.SlotRetryDelay < 0 {
		errs = append(errs, fmt.Errorf("slot.max.retries and slot.retry.delay.ms must not be negative (defaults 6 and 10000)"))
	}
	if c.MaxRetries < -1 || c.RetryWait <= 0 {
		errs = append(errs, fmt.Errorf("errors.max.retries must be -1 (forever) or more, retriable.restart.connector.wait.ms positive"))
	}
	if c.StatusInterval <= 0 {
		errs = append(errs, fmt.Errorf("status.update.interval.ms must be positive (default 10000)"))
	}
	if c.HeartbeatInterval < 0 {
		errs = append(errs, fmt.Errorf("heartbeat.interval.ms must be 0 (off) or positive"))
	}
	return errors.Join(errs...)
}

// dsn is the libpq keyword/value string of the connection, without the
// password: a parse error may quote the string, and pgx masks a password
// in it only up to the first escaped quote.
func (c *Config) dsn(replication bool) string {
	var b strings.Builder
	kv := func(k, v string) {
		if v == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteString("='")
		b.WriteString(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v))
		b.WriteByte('\'')
	}
	hosts := splitHosts(c.Host)
	kv("host", strings.Join(hosts, ","))
	ports := make([]string, len(c.Ports))
	for i, p := range c.Ports {
		ports[i] = strconv.Itoa(p)
	}
	kv("port", strings.Join(ports, ","))
	if len(hosts) > 1 {
		kv("target_session_attrs", "read-write")
		// A dead host that drops packets must not hold the failover for
		// the kernel's connect timeout (about two minutes) per attempt.
		kv("connect_timeout", "10")
	}
	kv("user", c.User)
	kv("dbname", c.DBName)
	kv("sslmode", c.SSLMode)
	kv("sslrootcert", c.SSLRootCert)
	kv("sslcert", c.SSLCert)
	kv("sslkey", c.SSLKey)
	kv("application_name", "outboxrelay")
	if replication {
		kv("replication", "database")
	}
	return b.String()
}

// ErrConnSettings: the connection settings cannot be used as they are (a
// TLS file that cannot be read, a bad value). Not retryable.
var ErrConnSettings = errors.New("connection settings")

// ConnConfig is the ordinary connection's configuration, the password set
// as a field rather than written into a string.
func (c *Config) ConnConfig() (*pgx.ConnConfig, error) {
	cc, err := pgx.ParseConfigWithOptions(c.dsn(false), pgx.ParseConfigOptions{ParseConfigOptions: c.parseOptions()})
	if err != nil {
		return nil, c.settingsError(err)
	}
	if c.Password != "" { // else PGPASSWORD or ~/.pgpass, as libpq
		cc.Password = c.Password
	}
	rawDial(&cc.Config)
	return cc, nil
}

// ReplicationConfig is the replication connection's configuration.
func (c *Config) ReplicationConfig() (*pgconn.Config, error) {
	cc, err := pgconn.ParseConfigWithOptions(c.dsn(true), c.parseOptions())
	if err != nil {
		return nil, c.settingsError(err)
	}
	if c.Password != "" {
		cc.Password = c.Password
	}
	rawDial(cc)
	return cc, nil
}

// rawDial makes the connections of cc read and write the socket through
// raw system calls (internal/rawconn): at a steady rate the replication
// connection's reads woke the runtime's monitor thread about once an event.
func rawDial(cc *pgconn.Config) {
	dial := cc.DialFunc
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return rawconn.Wrap(c), nil
	}
}

// Connect opens an ordinary connection as the relay's role.
func (c *Config) Connect(ctx context.Context) (*pgx.Conn, error) {
	cc, err := c.ConnConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, connectError("connecting", c, err)
	}
	return conn, nil
}

// parseOptions hands pgconn the key's password when it decrypts
// database.sslkey, again without writing it into the string.
func (c *Config) parseOptions() pgconn.ParseConfigOptions {
	return pgconn.ParseConfigOptions{GetSSLPassword: func(context.Context) string { return c.SSLPassword }}
}

func (c *Config) settingsError(err error) error {
	return fmt.Errorf("%w for %s as %s: %w; check database.sslrootcert, database.sslcert, database.sslkey, database.sslpassword and database.sslmode",
		ErrConnSettings, c.Where(), c.User, err)
}

// ForHost is the configuration of one host of database.hostname alone,
// whatever its role (check reads a standby's settings with it).
func (c *Config) ForHost(i int) *Config {
	h := *c
	hosts := splitHosts(c.Host)
	h.Host, h.Port, h.Ports = hosts[i], c.Ports[i], []int{c.Ports[i]}
	return &h
}

// Hosts counts the hosts of database.hostname.
func (c *Config) Hosts() int { return len(splitHosts(c.Host)) }

// Where names the server(s) for messages: host:port[,host:port]/dbname.
func (c *Config) Where() string {
	hosts := splitHosts(c.Host)
	for i, h := range hosts {
		p := c.Port
		if i < len(c.Ports) {
			p = c.Ports[i]
		}
		hosts[i] = h + ":" + strconv.Itoa(p)
	}
	return strings.Join(hosts, ",") + "/" + c.DBName
}

func splitHosts(s string) []string {
	var hosts []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// portsKey reads database.port: empty (5432 for every host), one port for
// every host, or one per host.
func portsKey(v string, hosts int) ([]int, error) {
	hosts = max(hosts, 1)
	var ports []int
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" && v == "" {
			f = "5432"
		}
		p, err := strconv.Atoi(f)
		if err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("database.port %q: write a port number, or one per host of database.hostname separated by commas, e.g. \"5432,5433\"", v)
		}
		ports = append(ports, p)
	}
	if len(ports) == 1 {
		for len(ports) < hosts {
			ports = append(ports, ports[0])
		}
	}
	if len(ports) != hosts {
		return nil, fmt.Errorf("database.port %q has %d ports for %d hosts in database.hostname: give one port for all, or one per host", v, len(ports), hosts)
	}
	return ports, nil
}

// Includes reports whether schema.table is one of the outbox tables.
func (c *Config) Includes(schema, table string) bool {
	name := schema + "." + table
	for _, re := range c.Tables {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func validSlotName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
