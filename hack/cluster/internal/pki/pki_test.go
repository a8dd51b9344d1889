package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

func TestWriteProducesAVerifiableChain(t *testing.T) {
	f, err := Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(f.CACert)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA not PEM")
	}
	serving, err := tls.LoadX509KeyPair(f.ServingCert, f.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(serving.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("serving cert does not verify for 127.0.0.1: %v", err)
	}
	admin, err := tls.LoadX509KeyPair(f.AdminCert, f.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	al, _ := x509.ParseCertificate(admin.Certificate[0])
	if _, err := al.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("admin cert does not verify as a client: %v", err)
	}
	if len(al.Subject.Organization) != 1 || al.Subject.Organization[0] != "system:masters" {
		t.Fatalf("admin must be in system:masters, got %v", al.Subject.Organization)
	}
	pub, _ := os.ReadFile(f.SAPublic)
	if b, _ := pem.Decode(pub); b == nil || b.Type != "PUBLIC KEY" {
		t.Fatal("service-account public key is not a PEM public key")
	}
}

func TestWriteKeepsExistingPKI(t *testing.T) {
	dir := t.TempDir()
	f1, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(f1.CACert)
	if _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(f1.CACert)
	if string(before) != string(after) {
		t.Fatal("a second Write replaced the CA, invalidating kubeconfigs already handed out")
	}
}
