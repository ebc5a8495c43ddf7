package certerr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestFailed(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("dial: %w", x509.UnknownAuthorityError{}), true},
		{fmt.Errorf("dial: %w", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "h"}), true},
		{x509.CertificateInvalidError{Reason: x509.Expired}, true},
		{&tls.CertificateVerificationError{Err: errors.New("x")}, true},
		{tls.RecordHeaderError{Msg: "not TLS"}, false},
		{io.EOF, false},
		{nil, false},
	} {
		if got := Failed(c.err); got != c.want {
			t.Errorf("Failed(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
