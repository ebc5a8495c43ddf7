package postgres

import (
	"fmt"
	"log/slog"
	"strings"
)

// Weakness is a verification the connection settings leave out: the key
// that weakens it, what an impostor on the network path can then do, and
// what to set instead.
type Weakness struct {
	Key    string
	Detail string
	Fix    string
}

// verifyFull is the fix of every weakened verification.
const verifyFull = `set "database.sslmode": "verify-full" and "database.sslrootcert" to the CA certificate that signed the server's`

// Weaknesses lists the verifications c leaves out, for the start-up WARN
// (WarnWeaknesses) and check's ⚠ lines: a database.sslmode below
// verify-full, a database.sslrootcert that the mode does not verify, and a
// database.require_auth that sends the password in clear text or as md5 to
// a server whose identity is not verified. Pure: it reads no file.
func (c *Config) Weaknesses() []Weakness {
	mode := c.SSLMode
	if c.SSLRootCert == "system" {
		mode = "verify-full" // libpq and pgx: sslrootcert=system means verify-full
	}
	var ws []Weakness
	add := func(key, detail string) { ws = append(ws, Weakness{Key: key, Detail: detail, Fix: verifyFull}) }
	switch mode {
	case "disable":
		add("database.sslmode", "database.sslmode=disable: no TLS; the rows read and the authentication go in clear text, and anyone on the network path can pose as the server")
	case "allow", "prefer":
		add("database.sslmode", "database.sslmode="+mode+": TLS only if the server offers it, and no certificate is verified; anyone on the network path can pose as the server")
	case "require":
		if c.SSLRootCert == "" {
			add("database.sslmode", "database.sslmode=require: TLS, but the server's certificate is not verified; any server with a self-signed certificate is accepted")
		} else {
			add("database.sslmode", "database.sslmode=require with database.sslrootcert: the certificate's CA is verified (as verify-ca), not that it names database.hostname; any server with a certificate of that CA is accepted")
		}
	case "verify-ca":
		add("database.sslmode", "database.sslmode=verify-ca: the certificate's CA is verified, not that it names database.hostname; any server with a certificate of that CA is accepted")
	}
	if c.SSLRootCert != "" && c.SSLRootCert != "system" && (mode == "disable" || mode == "allow" || mode == "prefer") {
		add("database.sslrootcert", fmt.Sprintf("database.sslrootcert is set, but database.sslmode=%s does not verify the server's certificate against it", mode))
	}
	if out := allowsPasswordOut(c.RequireAuth); len(out) > 0 && mode != "verify-full" {
		ws = append(ws, Weakness{Key: "database.require_auth",
			Detail: fmt.Sprintf("database.require_auth=%s lets the password go out as %s to a server whose identity is not verified", c.RequireAuth, strings.Join(out, " or ")),
			Fix:    fmt.Sprintf("store the role's password as SCRAM and leave database.require_auth at its default (%s), or %s", DefaultRequireAuth, verifyFull)})
	}
	return ws
}

// WarnWeaknesses logs one WARN per weakened verification of c, at start-up.
func WarnWeaknesses(log *slog.Logger, c *Config) {
	for _, w := range c.Weaknesses() {
		log.Warn("PostgreSQL verification weakened: "+w.Detail, "key", w.Key, "fix", w.Fix)
	}
}
