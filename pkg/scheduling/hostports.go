package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// hostPort is one (ip, protocol, port) a pod binds on its node.
type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

func (h hostPort) String() string { return fmt.Sprintf("%s/%s:%d", h.protocol, h.ip, h.port) }

// conflicts follows the kube-scheduler: same port and protocol, and either the same IP or one
// of them binds every address.
func (h hostPort) conflicts(o hostPort) bool {
	if h.port != o.port || h.protocol != o.protocol {
		return false
	}
	return h.ip == o.ip || h.ip == "0.0.0.0" || o.ip == "0.0.0.0"
}

// podHostPorts lists the host ports of every container (init containers included).
func podHostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort == 0 {
					continue
				}
				h := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
				if h.ip == "" || h.ip == "::" {
					h.ip = "0.0.0.0"
				}
				if h.protocol == "" {
					h.protocol = corev1.ProtocolTCP
				}
				out = append(out, h)
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return out
}

func portsConflict(used, want []hostPort) (hostPort, bool) {
	for _, w := range want {
		for _, u := range used {
			if u.conflicts(w) {
				return w, true
			}
		}
	}
	return hostPort{}, false
}
