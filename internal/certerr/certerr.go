// Package certerr recognizes a peer certificate that did not verify, for
// the PostgreSQL and the Kafka side alike: such a failure will not go away
// on the next try, so neither side retries it.
package certerr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// Failed reports whether err (or an error it wraps) is a certificate
// verification failure: unknown authority, wrong host name, or an invalid
// certificate.
func Failed(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}
