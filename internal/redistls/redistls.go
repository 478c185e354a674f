// Package redistls runs redis-server processes that speak only TLS, or that
// require an ACL login, for tests of the client adapters: a certificate
// authority made for the test, a server certificate for 127.0.0.1 signed by
// it, and users given on the command line.
//
// It finds redis-server with redistest.Binary, so a missing one fails the
// test unless REDLOCK_SKIP_REDIS=1 opts out (see internal/redistest).
package redistls

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/redistest"
)

// CA is a certificate authority made for one test, with a server
// certificate for 127.0.0.1 and localhost that it signed. Its files live in a
// temporary directory removed when the test ends.
type CA struct {
	certFile, serverCert, serverKey string
	pool                            *x509.CertPool
}

// NewCA makes a CA and a server certificate, valid for a day.
func NewCA(t testing.TB) *CA {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey, caDER, caCert := newRoot(t, now)
	srvDER, srvKeyDER := newServerCert(t, now, caCert, caKey)

	ca := &CA{
		certFile:   filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "server.crt"),
		serverKey:  filepath.Join(dir, "server.key"),
		pool:       x509.NewCertPool(),
	}
	ca.pool.AddCert(caCert)
	writePEM(t, ca.certFile, "CERTIFICATE", caDER)
	writePEM(t, ca.serverCert, "CERTIFICATE", srvDER)
	writePEM(t, ca.serverKey, "PRIVATE KEY", srvKeyDER)
	return ca
}

// newRoot makes the CA's key and self-signed certificate, valid from an hour
// before now to a day after.
func newRoot(t testing.TB, now time.Time) (*ecdsa.PrivateKey, []byte, *x509.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "redlock test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	return caKey, caDER, caCert
}

// newServerCert makes a server certificate for 127.0.0.1 and localhost,
// signed by the CA, and its PKCS#8 key, both DER-encoded.
func newServerCert(t testing.TB, now time.Time, caCert *x509.Certificate, caKey *ecdsa.PrivateKey) (certDER, keyDER []byte) {
	t.Helper()
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKeyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	return srvDER, srvKeyDER
}

// ClientConfig returns a TLS configuration that trusts only this CA.
func (ca *CA) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}
}

// User is an ACL user with full access to every key and channel.
type User struct {
	Name     string
	Password string
}

// Options says how a Server accepts clients. The zero Options is a plain
// server open to the default user.
type Options struct {
	// CA, when set, makes the server listen only on a TLS port with its
	// certificate; clients are not asked for certificates.
	CA *CA
	// Users are created with full access. When any is given, the default
	// user is switched off, so every client must log in.
	Users []User
}

// Server is one redis-server process on 127.0.0.1.
type Server struct {
	// Port is the TCP port, TLS-only when the server has a CA.
	Port int
	tls  bool
	stop func()
}

// Start runs one redis-server as opts says and stops it when t ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := redistest.Binary(t)
	dir := t.TempDir()
	var lastErr error
	for range 5 { // a port picked free can be taken before redis binds it
		port, err := redistest.FreePort()
		if err != nil {
			lastErr = err
			continue
		}
		cmd := exec.Command(bin, args(dir, port, opts)...)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := sync.OnceFunc(func() { _ = cmd.Process.Kill(); <-exited })
		if lastErr = waitReady(filepath.Join(dir, "redis.log"), exited); lastErr == nil {
			t.Cleanup(stop)
			s := &Server{Port: port, tls: opts.CA != nil, stop: stop}
			s.markFresh(t, opts)
			return s
		}
		stop()
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return nil
}

// StartN runs n servers with the same options.
func StartN(t testing.TB, n int, opts Options) []*Server {
	t.Helper()
	return redistest.StartMany(t, n, func(t testing.TB) *Server { t.Helper(); return Start(t, opts) })
}

// Kill stops the process at once (SIGKILL). Safe to call twice.
func (s *Server) Kill() { s.stop() }

// Addr returns host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL returns the node's URL, rediss:// for a TLS server, with the given
// credentials when user or password is not empty.
func (s *Server) URL(user, password string) string {
	u := url.URL{Scheme: "redis", Host: s.Addr()}
	if s.tls {
		u.Scheme = "rediss"
	}
	switch {
	case password != "":
		u.User = url.UserPassword(user, password)
	case user != "":
		u.User = url.User(user)
	}
	return u.String()
}

func args(dir string, port int, opts Options) []string {
	a := []string{
		"--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--daemonize", "no", "--maxmemory-policy", "noeviction",
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	if opts.CA != nil {
		a = append(a, "--port", "0", "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", opts.CA.serverCert, "--tls-key-file", opts.CA.serverKey,
			"--tls-ca-cert-file", opts.CA.certFile, "--tls-auth-clients", "no")
	} else {
		a = append(a, "--port", strconv.Itoa(port))
	}
	for _, u := range opts.Users {
		a = append(a, "--user", u.Name, "on", ">"+u.Password, "~*", "&*", "+@all")
	}
	if len(opts.Users) > 0 {
		a = append(a, "--user", "default", "off")
	}
	return a
}

// waitReady waits for the server's log to say it accepts connections: no
// client is needed, whatever the transport and users.
func waitReady(logFile string, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			log, _ := os.ReadFile(logFile)
			return fmt.Errorf("redis-server exited at start; log:\n%s", log)
		default:
		}
		if log, _ := os.ReadFile(logFile); bytes.Contains(log, []byte("Ready to accept connections")) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("redis-server not ready after 10s")
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// markFresh declares the new server's run fresh (see redistest.MarkFresh),
// logged in as the first user and over TLS when the server asks for them.
func (s *Server) markFresh(t testing.TB, opts Options) {
	t.Helper()
	o := &redis.Options{Addr: s.Addr(), MaxRetries: -1}
	if opts.CA != nil {
		o.TLSConfig = opts.CA.ClientConfig()
	}
	if len(opts.Users) > 0 {
		o.Username, o.Password = opts.Users[0].Name, opts.Users[0].Password
	}
	c := redis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("mark redis-server on %s fresh: %v", s.Addr(), err)
	}
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			if err := c.Set(ctx, redistest.FreshStartKey, id, 0).Err(); err != nil {
				t.Fatalf("mark redis-server on %s fresh: %v", s.Addr(), err)
			}
			return
		}
	}
	t.Fatalf("mark redis-server on %s fresh: INFO server has no run_id", s.Addr())
}
