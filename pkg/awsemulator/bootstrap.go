package awsemulator

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Bootstrap formats ParseUserData recognises.
const (
	BootstrapAL2023       = "al2023"       // nodeadm NodeConfig (bare or in MIME parts application/node.eks.aws)
	BootstrapAL2          = "al2"          // /etc/eks/bootstrap.sh in a shell script (bare or in MIME)
	BootstrapBottlerocket = "bottlerocket" // TOML settings.kubernetes.*
	BootstrapWindows      = "windows"      // PowerShell calling Start-EKSBootstrap.ps1
)

// NodeBootstrap is what a node's bootstrap reads from its user data: the settings the
// kubelet then registers the Node with. Format is "" when nothing in the user data is a
// bootstrap the emulator knows (Custom AMIs with their own scripts): such a node joins
// with the kubelet's defaults.
type NodeBootstrap struct {
	Format       string
	ClusterName  string
	APIServer    string
	CABundle     string // base64 PEM
	DNSClusterIP string
	MaxPods      int // 0: not set (the ENI formula applies)
	PodsPerCore  int // 0: not set; else pods are capped at PodsPerCore × vCPUs
	Labels       map[string]string
	Taints       []corev1.Taint
}

// ParseUserData reads plain-text (already base64-decoded) user data as the node's
// bootstrap would. Errors name what could not be read.
func ParseUserData(userData string) (*NodeBootstrap, error) {
	nb := &NodeBootstrap{Labels: map[string]string{}}
	trimmed := strings.TrimSpace(userData)
	switch {
	case trimmed == "":
		return nb, nil
	case isMIME(trimmed):
		return nb, parseMIME(nb, userData)
	case strings.Contains(strings.ToLower(trimmed), "<powershell>") || strings.Contains(trimmed, "Start-EKSBootstrap"):
		return nb, parseWindows(nb, userData)
	case strings.Contains(trimmed, "node.eks.aws/"):
		nb.Format = BootstrapAL2023
		return nb, mergeNodeConfigs(nb, []string{userData})
	case strings.Contains(trimmed, "bootstrap.sh"):
		return nb, parseAL2Script(nb, userData)
	case strings.Contains(trimmed, "[settings"):
		return nb, parseBottlerocket(nb, userData)
	}
	return nb, nil
}

func isMIME(s string) bool {
	head, _, _ := strings.Cut(s, "\n\n")
	head = strings.ToLower(head)
	return strings.HasPrefix(head, "mime-version:") || strings.HasPrefix(head, "content-type: multipart/")
}

// parseMIME reads a multipart/mixed document: every application/node.eks.aws part is a
// NodeConfig (merged in order, later parts winning), every shell part may call bootstrap.sh.
func parseMIME(nb *NodeBootstrap, doc string) error {
	doc = strings.ReplaceAll(doc, "\r\n", "\n")
	tp := textproto.NewReader(bufio.NewReader(strings.NewReader(doc)))
	hdr, err := tp.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return fmt.Errorf("user data: reading MIME headers: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(hdr.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("user data: Content-Type %q: %w", hdr.Get("Content-Type"), err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return fmt.Errorf("user data: Content-Type %q is not multipart", mediaType)
	}
	body, _ := io.ReadAll(tp.R)
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var nodeConfigs, scripts []string
	for i := 1; ; i++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("user data: MIME part %d: %w", i, err)
		}
		raw, err := io.ReadAll(part)
		if err != nil {
			return fmt.Errorf("user data: MIME part %d: %w", i, err)
		}
		ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		switch ct {
		case "application/node.eks.aws":
			nodeConfigs = append(nodeConfigs, string(raw))
		case "text/x-shellscript", "":
			scripts = append(scripts, string(raw))
		}
	}
	// An AL2 AMI has bootstrap.sh and no nodeadm (cloud-init ignores NodeConfig parts);
	// AL2023 has no bootstrap.sh. So a part calling bootstrap.sh means AL2.
	for _, s := range scripts {
		if strings.Contains(s, "bootstrap.sh") {
			return parseAL2Script(nb, s)
		}
	}
	if len(nodeConfigs) > 0 {
		nb.Format = BootstrapAL2023
		return mergeNodeConfigs(nb, nodeConfigs)
	}
	return nil
}

// applyKubeletArgs reads the kubelet flags the bootstraps pass through
// (--node-labels, --register-with-taints, --max-pods).
func applyKubeletArgs(nb *NodeBootstrap, args []string, where string) error {
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		switch name {
		case "--node-labels", "--register-with-taints", "--max-pods", "--pods-per-core":
		default:
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		value = unquote(value)
		switch name {
		case "--node-labels":
			labels, err := parseLabelList(value)
			if err != nil {
				return fmt.Errorf("%s: --node-labels: %w", where, err)
			}
			for k, v := range labels {
				nb.Labels[k] = v
			}
		case "--register-with-taints":
			taints, err := parseTaintList(value)
			if err != nil {
				return fmt.Errorf("%s: --register-with-taints: %w", where, err)
			}
			nb.Taints = taints
		case "--max-pods", "--pods-per-core":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 {
				return fmt.Errorf("%s: %s=%q is not a positive integer", where, name, value)
			}
			if name == "--max-pods" {
				nb.MaxPods = n
			} else {
				nb.PodsPerCore = n
			}
		}
	}
	return nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// parseLabelList reads "k=v,k2=v2" as the kubelet's --node-labels does.
func parseLabelList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// parseTaintList reads "k=v:Effect,k2:Effect" as the kubelet's --register-with-taints does.
func parseTaintList(s string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, spec := range strings.Split(s, ",") {
		if spec = strings.TrimSpace(spec); spec == "" {
			continue
		}
		t, err := parseTaint(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseTaint(spec string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(spec, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q has no effect (key=value:Effect)", spec)
	}
	k, v, _ := strings.Cut(kv, "=")
	t := corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}
	if err := checkTaint(t); err != nil {
		return corev1.Taint{}, fmt.Errorf("taint %q: %w", spec, err)
	}
	return t, nil
}

func checkTaint(t corev1.Taint) error {
	if t.Key == "" {
		return fmt.Errorf("empty key")
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return fmt.Errorf("effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
}

// shellWords splits a command line as sh (and, for the quoting the bootstraps use,
// PowerShell) does: single quotes literal, double quotes with backslash escapes,
// backslash-newline a continuation.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated double quote in %q", line)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			if line[i] != '\n' {
				cur.WriteByte(line[i])
				inWord = true
			}
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// logicalLines joins backslash-newline continuations.
func logicalLines(script string) []string {
	script = strings.ReplaceAll(script, "\r\n", "\n")
	return strings.Split(strings.ReplaceAll(script, "\\\n", " "), "\n")
}
