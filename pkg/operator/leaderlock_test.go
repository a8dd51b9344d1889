package operator

import (
	"testing"

	"k8s.io/client-go/rest"
)

// The leader election client must not share the controllers' connection:
// client-go hands equal TLS configs the same cached transport.
func TestOwnConnection(t *testing.T) {
	main := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	shared, err := rest.TransportFor(rest.CopyConfig(main))
	if err != nil {
		t.Fatal(err)
	}
	same, err := rest.TransportFor(rest.CopyConfig(main))
	if err != nil {
		t.Fatal(err)
	}
	if shared != same {
		t.Fatal("client-go no longer shares transports between equal configs: this test checks nothing")
	}
	leader := rest.CopyConfig(main)
	OwnConnection(leader)
	own, err := rest.TransportFor(leader)
	if err != nil {
		t.Fatal(err)
	}
	if own == shared {
		t.Error("the leader election config got the controllers' shared transport")
	}
	// leaderLock copies the config: the copy keeps its own connection.
	again, err := rest.TransportFor(rest.CopyConfig(leader))
	if err != nil {
		t.Fatal(err)
	}
	if again == shared {
		t.Error("a copy of the leader election config got the shared transport")
	}
}
