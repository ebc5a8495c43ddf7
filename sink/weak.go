package sink

import (
	"log/slog"
	"strings"
)

// Weakness is a verification the Kafka settings leave out: the key that
// weakens it, what an impostor or an eavesdropper on the network path can
// then do, and what to set instead.
type Weakness struct {
	Key    string
	Detail string
	Fix    string
}

// saslSSLFix is the fix of a connection without TLS.
const saslSSLFix = `set "security.protocol": "SASL_SSL" (or SSL) and "ssl.truststore.location" to the PEM file of the CA that signed the brokers' certificates`

// Weaknesses lists the verifications c leaves out, for the start-up WARN
// (WarnWeaknesses) and check's ⚠ lines: no TLS (security.protocol
// PLAINTEXT or SASL_PLAINTEXT, where PLAIN sends the password in clear
// text), and the brokers' host name not checked
// (ssl.endpoint.identification.algorithm empty). c is validated (Validate
// upper-cases the protocol and the mechanism). Pure: it reads no file.
func (c *Config) Weaknesses() []Weakness {
	var ws []Weakness
	switch c.SecurityProtocol {
	case "PLAINTEXT", "":
		ws = append(ws, Weakness{Key: KeySecurityProtocol,
			Detail: "security.protocol=PLAINTEXT: no TLS and no authentication; the records go in clear text, and anyone on the network path can read them or pose as a broker",
			Fix:    saslSSLFix + ", with sasl.mechanism SCRAM-SHA-512 and sasl.jaas.config"})
	case "SASL_PLAINTEXT":
		detail := "security.protocol=SASL_PLAINTEXT: no TLS; the records go in clear text, and anyone on the network path can read or change them"
		if c.SASLMechanism == "PLAIN" {
			detail = "security.protocol=SASL_PLAINTEXT with sasl.mechanism=PLAIN: the password goes in clear text to whoever answers, and the records go unencrypted"
		} else if strings.HasPrefix(c.SASLMechanism, "SCRAM-") {
			detail += "; an eavesdropper gets the " + c.SASLMechanism + " exchange, open to an offline guess of the password"
		}
		ws = append(ws, Weakness{Key: KeySecurityProtocol, Detail: detail, Fix: saslSSLFix})
	}
	if c.TLSSkipHostnameCheck && (c.SecurityProtocol == "SSL" || c.SecurityProtocol == "SASL_SSL") {
		detail := "ssl.endpoint.identification.algorithm is empty: the brokers' certificate chain is verified, not that it names the broker; any server with a certificate of "
		if c.TLSCAFile == "" {
			detail += "any public CA the system trusts (no ssl.truststore.location) is accepted"
		} else {
			detail += "that CA is accepted"
		}
		ws = append(ws, Weakness{Key: KeyEndpointIdentify, Detail: detail,
			Fix: `remove ssl.endpoint.identification.algorithm (its default, https, checks the host name) and give the brokers certificates that name them`})
	}
	return ws
}

// WarnWeaknesses logs one WARN per weakened Kafka verification of c, at
// start-up.
func WarnWeaknesses(log *slog.Logger, c *Config) {
	for _, w := range c.Weaknesses() {
		log.Warn("Kafka verification weakened: "+w.Detail, "key", w.Key, "fix", w.Fix)
	}
}
