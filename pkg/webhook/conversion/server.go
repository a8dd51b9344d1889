package conversion

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Server serves the conversion webhook over TLS on every path of CRDs.
type Server struct {
	// Listener accepts connections; Serve closes it.
	Listener net.Listener
	// Certificate is served to the apiserver, whose CRDs trust its CA.
	Certificate *Certificate

	// current is what new TLS handshakes get: Certificate until Rotate.
	current atomic.Pointer[tls.Certificate]
}

// Rotate serves cert to every handshake from now on (a renewed certificate;
// open connections keep theirs).
func (s *Server) Rotate(cert *Certificate) error {
	pair, err := cert.TLS()
	if err != nil {
		return err
	}
	s.current.Store(&pair)
	return nil
}

// Serve runs until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	if s.current.Load() == nil {
		if err := s.Rotate(s.Certificate); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	paths := map[string]bool{}
	for _, p := range CRDs {
		if !paths[p] {
			mux.Handle(p, Handler{})
			paths[p] = true
		}
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.current.Load(), nil },
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(s.Listener, "", "") }()
	select {
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
