package conversion

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server serves the conversion webhook over TLS on every path of CRDs.
type Server struct {
	// Listener accepts connections; Serve closes it.
	Listener net.Listener
	// Certificate is served to the apiserver, whose CRDs trust its CA.
	Certificate *Certificate
}

// Serve runs until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	pair, err := s.Certificate.TLS()
	if err != nil {
		return err
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
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
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
