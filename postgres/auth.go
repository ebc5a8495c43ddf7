package postgres

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultRequireAuth is database.require_auth's default: the password goes
// only through SCRAM-SHA-256, which proves to the client that the server
// knows the password (or its SCRAM verifier) and never shows it; a server
// that asks for no password (trust, cert) is accepted, as nothing is sent.
// A server asking for a cleartext or md5 password is refused before the
// password is sent, whatever database.sslmode is.
const DefaultRequireAuth = "scram-sha-256,none"

// ErrAuthMethod: the server asked for an authentication method that
// database.require_auth refuses. Not retryable: the server asks the same
// next time.
var ErrAuthMethod = errors.New("authentication method refused")

// validateRequireAuth checks database.require_auth as libpq reads
// require_auth: a comma-separated list of methods, each of password, md5,
// gss, sspi, scram-sha-256, oauth or none, either all plain (the methods
// allowed) or all negated with ! (the methods refused), none twice.
func validateRequireAuth(v string) error {
	seen := map[string]bool{}
	negated := strings.HasPrefix(strings.TrimSpace(v), "!")
	for _, part := range strings.Split(v, ",") {
		m := strings.TrimSpace(part)
		neg := strings.HasPrefix(m, "!")
		m = strings.TrimPrefix(m, "!")
		switch {
		case neg != negated:
			return fmt.Errorf("database.require_auth %q mixes negated (!) and plain methods; list the methods to allow, e.g. %q, or only the ones to refuse, e.g. \"!password,!md5\"", v, DefaultRequireAuth)
		case seen[m]:
			return fmt.Errorf("database.require_auth %q names %s twice", v, m)
		}
		switch m {
		case "password", "md5", "gss", "sspi", "scram-sha-256", "oauth", "none":
		default:
			return fmt.Errorf("database.require_auth %q: %q is not a libpq method; use password, md5, gss, sspi, scram-sha-256, oauth or none (default %q)", v, m, DefaultRequireAuth)
		}
		seen[m] = true
	}
	return nil
}

// allowsPasswordOut reports whether database.require_auth lets the
// password go out as cleartext or as an md5 hash (which a server that
// captured it can replay to the real one), and which of them.
func allowsPasswordOut(v string) []string {
	negated := strings.HasPrefix(strings.TrimSpace(v), "!")
	listed := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		listed[strings.TrimPrefix(strings.TrimSpace(part), "!")] = true
	}
	var out []string
	for _, m := range []string{"password", "md5"} {
		if listed[m] != negated {
			out = append(out, m)
		}
	}
	return out
}

// authRefusal recognises pgx's refusal under require_auth ("authentication
// method requirement … failed: server requested md5 authentication") and
// returns the hint that names the key and what to do.
func (c *Config) authRefusal(err error) (string, bool) {
	msg := err.Error()
	if !strings.Contains(msg, "authentication method requirement") {
		return "", false
	}
	method := "this"
	if _, after, ok := strings.Cut(msg, "server requested "); ok {
		method, _, _ = strings.Cut(after, " ")
	}
	if strings.Contains(msg, "server did not complete authentication") {
		return fmt.Sprintf("; the server let %s in without authentication, which database.require_auth %q does not allow: add none to it, or set pg_hba.conf to scram-sha-256 for this role", c.User, c.RequireAuth), true
	}
	return fmt.Sprintf("; database.require_auth %q refused it, so that the password never reaches a server that is not the real one: "+
		"store the role's password as SCRAM (SET password_encryption = 'scram-sha-256'; then ALTER ROLE %s PASSWORD …) and set its pg_hba.conf line to scram-sha-256, "+
		"or accept %s authentication with \"database.require_auth\": %q (and database.sslmode=verify-full, so that only the real server can ask)",
		c.RequireAuth, QuoteIdent(c.User), method, DefaultRequireAuth+","+method), true
}
