package controlplane

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Port ranges and reservations.
//
// A port is picked by listening on it and closing the listener; the component
// that is to use it binds it seconds later (kube-scheduler only after the API
// server is ready, 10 s and more on a loaded machine). Tests start clusters in
// parallel, so another cluster's picker could draw the same port in that gap
// and one of the two components fail with "address already in use" (it did,
// in CI: kube-scheduler). Every picker on the machine therefore records what
// it drew in one reservation file, under an exclusive lock, and draws around
// the ports other live clusters reserved recently.

const (
	// portLow-portHigh lies below Linux's ephemeral range (32768-60999 by
	// default). Ports the kernel hands out (":0") come from that range, which
	// every outgoing connection also draws from: a port picked there can be
	// taken by some client connection before the component binds it. Ports
	// below the range are only taken by listeners that ask for them. The rest
	// of them (28000-32767) is for Karpenter processes the tests start
	// (pkg/test/kit.FreePort), which bind theirs at once and reserve nothing.
	portLow, portHigh = 20000, 27999
	// reservationTTL: how long a reservation holds against other pickers. By
	// then the component has bound the port (or the cluster failed), and a
	// bound port fails the listen test anyway.
	reservationTTL = 10 * time.Minute
)

// reservationFile is shared by every cluster on the machine (one per user:
// TMPDIR is per user where it matters).
func reservationFile() string { return filepath.Join(os.TempDir(), "karpenter-cluster-ports") }

type reservation struct {
	port int
	pid  int
	at   time.Time
}

// pickPorts is freePorts; a test replaces it to make a port conflict happen.
var pickPorts = freePorts

// freePorts picks n distinct ports that are free now and that no other live
// cluster reserved in the last reservationTTL, and reserves them for this
// process.
func freePorts(n int) ([]int, error) {
	return reservePorts(reservationFile(), portLow, portHigh, n, os.Getpid(), time.Now())
}

// reservePorts draws n ports from low-high, avoiding the live reservations
// in path, and records them for pid.
func reservePorts(path string, low, high, n, pid int, now time.Time) ([]int, error) {
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("port reservations: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("port reservations: locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks too

	held, err := readReservations(path)
	if err != nil {
		return nil, err
	}
	taken := map[int]bool{}
	var keep []reservation
	for _, r := range held {
		if now.Sub(r.at) < reservationTTL && alive(r.pid) {
			keep = append(keep, r)
			taken[r.port] = true
		}
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("no free port in %d-%d after %d tries (%d reserved by other clusters in %s)", low, high, tries, len(taken), path)
		}
		p := low + rand.IntN(high-low+1)
		if taken[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // someone listens there: draw another
		}
		ls = append(ls, l)
		taken[p] = true
		ports = append(ports, p)
		keep = append(keep, reservation{port: p, pid: pid, at: now})
	}
	return ports, writeReservations(path, keep)
}

// readReservations reads "port pid unix-seconds" lines; a line it cannot
// parse is dropped (the file is only ever a hint between pickers).
func readReservations(path string) ([]reservation, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("port reservations: %w", err)
	}
	defer f.Close()
	var out []reservation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		port, err1 := strconv.Atoi(fs[0])
		pid, err2 := strconv.Atoi(fs[1])
		at, err3 := strconv.ParseInt(fs[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, reservation{port: port, pid: pid, at: time.Unix(at, 0)})
	}
	return out, sc.Err()
}

func writeReservations(path string, rs []reservation) error {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%d %d %d\n", r.port, r.pid, r.at.Unix())
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("port reservations: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("port reservations: %w", err)
	}
	return nil
}

// alive: a process with that pid exists (EPERM: it does, as another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
