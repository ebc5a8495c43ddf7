package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxrelay/outboxrelay/internal/confkey"
	"github.com/outboxrelay/outboxrelay/internal/rawconn"
	"github.com/outboxrelay/outboxrelay/internal/textlist"
)

// Config is the connection side of a Debezium PostgreSQL connector config:
// where the database is, as whom to connect, and which tables are the
// outbox. Build it with ParseConfig; every field's doc names its connector
// key and default.
type Config struct {
	// Host is database.hostname (required): one host, or a comma-separated
	// list tried in order for a read-write server, as libpq does with
	// target_session_attrs=read-write, so that after a failover the relay
	// finds the new primary. Port is database.port, default 5432: one
	// port for every host, or one per host.
	Host  string
	Port  int   // the first host's port
	Ports []int // one per host
	// PrimaryHost is database.primary.hostname: when Host is a hot
	// standby, the primary, for what a standby cannot do (Primary).
	// PrimaryPort is database.primary.port, default 5432.
	PrimaryHost string
	PrimaryPort int
	// readWrite: connect only to a read-write server, within
	// connect_timeout, even with one host (Primary sets it).
	readWrite   bool
	User        string // database.user (required)
	Password    string // database.password; never logged
	DBName      string // database.dbname (required)
	SSLMode     string // database.sslmode, default prefer (libpq modes)
	SSLRootCert string // database.sslrootcert
	SSLCert     string // database.sslcert
	SSLKey      string // database.sslkey
	SSLPassword string // database.sslpassword: of an encrypted database.sslkey

	// RequireAuth is database.require_auth, libpq's require_auth: the
	// authentication methods the server may ask for, default
	// DefaultRequireAuth (the password only through SCRAM-SHA-256).
	RequireAuth string
	// ChannelBinding is database.channel_binding, libpq's
	// channel_binding: disable, prefer (default) or require (SCRAM bound to
	// the TLS connection, which a man in the middle cannot relay).
	ChannelBinding string

	// Tables is table.include.list: regexes matched against the whole
	// "schema.table" name, as Debezium does.
	Tables     []*regexp.Regexp
	TablesText string
}

// ParseConfig reads the connection keys and table.include.list of a
// connector config map, then validates them. Keys that belong to other
// components are ignored here; unknown keys are reported by the caller,
// which sees the whole map.
func ParseConfig(m map[string]string) (Config, error) {
	r := confkey.Collect(m)
	c := Config{
		Host:        r.Text("database.hostname"),
		User:        r.Text("database.user"),
		Password:    m["database.password"],
		DBName:      r.Text("database.dbname"),
		SSLMode:     strings.ToLower(r.Text("database.sslmode")),
		SSLRootCert: r.Text("database.sslrootcert"),
		SSLCert:     r.Text("database.sslcert"),
		SSLKey:      r.Text("database.sslkey"),
		SSLPassword: m["database.sslpassword"],
		TablesText:  m["table.include.list"],
		PrimaryHost: r.Text("database.primary.hostname"),
		PrimaryPort: int(r.Int("database.primary.port")),

		RequireAuth:    strings.ToLower(r.Text("database.require_auth")),
		ChannelBinding: strings.ToLower(r.Text("database.channel_binding")),
	}
	port := r.Text("database.port")
	var errs []error
	if err := r.Err(); err != nil {
		errs = append(errs, err)
	}
	var err error
	if c.Ports, err = portsKey(port, len(splitHosts(c.Host))); err != nil {
		errs = append(errs, err)
	} else {
		c.Port = c.Ports[0]
	}
	errs = append(errs, c.parseTables()...)
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	return c, c.Validate()
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

// Validate checks the required keys and the TLS mode, naming the key and
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
	// Without a table the relay would publish nothing and still move its
	// position: a silent no-op that looks healthy. Debezium would capture
	// every table; outboxrelay routes outbox tables only, so it must be
	// told which.
	if len(c.Tables) == 0 && c.TablesText == "" {
		errs = append(errs, errors.New(`table.include.list is required: name the outbox table(s), e.g. "table.include.list": "public.outbox"`))
	}
	switch c.SSLMode {
	case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
	default:
		errs = append(errs, fmt.Errorf("database.sslmode %q is not a libpq mode; use disable, allow, prefer, require, verify-ca or verify-full", c.SSLMode))
	}
	if err := validateRequireAuth(c.RequireAuth); err != nil {
		errs = append(errs, err)
	}
	switch c.ChannelBinding {
	case "disable", "prefer", "require":
	default:
		errs = append(errs, fmt.Errorf("database.channel_binding %q is not a libpq value; use disable, prefer or require", c.ChannelBinding))
	}
	return errors.Join(errs...)
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
	if len(hosts) > 1 || c.readWrite {
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
	kv("require_auth", c.RequireAuth)
	kv("channel_binding", c.ChannelBinding)
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
	if err := c.checkTLSFiles(); err != nil {
		return nil, c.settingsError(err)
	}
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

// ReplicationConfig is the configuration of a replication connection
// (replication=database), for the logical replication stream.
func (c *Config) ReplicationConfig() (*pgconn.Config, error) {
	if err := c.checkTLSFiles(); err != nil {
		return nil, c.settingsError(err)
	}
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
		return nil, c.readOnlyRefused(c.ConnectError("connecting", err))
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

// Primary is the configuration of database.primary.hostname, every other
// setting shared, or nil when the key is not set. It is a key of its own
// rather than the standby's primary_conninfo: that string is the standby's
// replication credentials (often another role), visible only to roles with
// pg_read_all_settings, and may name an upstream standby of a cascade.
// Its connections ask for target_session_attrs=read-write, so that a
// former primary now in recovery (after a failover, or rebuilt as a
// standby) is refused rather than written to, and connect_timeout=10, so
// that a host that drops packets does not hold the caller for the
// kernel's connect timeout (about two minutes).
func (c *Config) Primary() *Config {
	if c.PrimaryHost == "" {
		return nil
	}
	p := *c
	p.Host, p.Port, p.Ports = c.PrimaryHost, c.PrimaryPort, []int{c.PrimaryPort}
	p.PrimaryHost, p.PrimaryPort = "", 0
	p.readWrite = true
	return &p
}

// String describes the connection for a message: where, as whom, the TLS
// mode and the tables, never a password (%v, %+v and %s print it).
func (c Config) String() string {
	return fmt.Sprintf("%s as %s (sslmode %s, password %s, table.include.list %q)",
		c.Where(), c.User, c.SSLMode, shown(c.Password), c.TablesText)
}

// GoString is String for %#v.
func (c Config) GoString() string { return "postgres.Config{" + c.String() + "}" }

// LogValue is the connection as slog attributes, the passwords redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("host", c.Host), slog.Any("ports", c.Ports), slog.String("user", c.User),
		slog.String("dbname", c.DBName), slog.String("sslmode", c.SSLMode), slog.String("password", shown(c.Password)),
		slog.String("sslpassword", shown(c.SSLPassword)), slog.String("table.include.list", c.TablesText))
}

// shown is how a password shows: whether it is set, never its value.
func shown(password string) string {
	if password == "" {
		return "(not set)"
	}
	return "[redacted]"
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
