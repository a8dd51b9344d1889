package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"sort"
	"strings"
)

// MIME content types of the parts Karpenter writes and reads.
const (
	// Boundary separates the parts of the archives Karpenter writes (upstream's "//").
	Boundary = "//"
	// ContentTypeShellScript is a part cloud-init runs as a script.
	ContentTypeShellScript = `text/x-shellscript; charset="us-ascii"`
	// ContentTypeNodeConfig is a part nodeadm reads as a NodeConfig.
	ContentTypeNodeConfig = "application/node.eks.aws"
)

// Part is one part of a MIME multi-part archive.
type Part struct {
	// Header holds the part's headers; Content-Type at least.
	Header textproto.MIMEHeader
	// Content is the part's body.
	Content string
}

func newPart(contentType, content string) Part {
	return Part{Header: textproto.MIMEHeader{"Content-Type": {contentType}}, Content: content}
}

// ContentType is the part's media type without parameters (text/x-shellscript).
func (p Part) ContentType() string {
	mt, _, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
	if err != nil {
		return strings.TrimSpace(p.Header.Get("Content-Type"))
	}
	return mt
}

// ParseMIME splits a multi-part MIME document into its parts, keeping each
// part's headers and body. Errors say what is wrong with the document.
func ParseMIME(doc string) ([]Part, error) {
	msg, err := mail.ReadMessage(strings.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("reading MIME headers: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("MIME document has no valid Content-Type header: %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, fmt.Errorf("MIME document is %s, not multipart", mediaType)
	}
	if params["boundary"] == "" {
		return nil, errors.New("multipart MIME document has no boundary")
	}
	reader := multipart.NewReader(msg.Body, params["boundary"])
	var parts []Part
	for i := 1; ; i++ {
		p, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", i, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", i, err)
		}
		parts = append(parts, Part{Header: p.Header, Content: strings.ReplaceAll(string(body), "\r\n", "\n")})
	}
}

// WriteMIME serializes parts as a multipart/mixed archive with boundary "//"
// and LF line endings (what upstream writes once it strips the CRs Go's
// multipart writer adds). Content-Type comes first in each part's headers,
// the others follow sorted.
func WriteMIME(parts []Part) (string, error) {
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\n")
	fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=%q\n\n", Boundary)
	for i, p := range parts {
		if strings.Contains("\n"+p.Content, "\n--"+Boundary) {
			return "", fmt.Errorf("MIME part %d contains a line starting with the boundary --%s", i+1, Boundary)
		}
		b.WriteString("--" + Boundary + "\n")
		if ct := p.Header.Get("Content-Type"); ct != "" {
			b.WriteString("Content-Type: " + ct + "\n")
		}
		keys := make([]string, 0, len(p.Header))
		for k := range p.Header {
			if k != "Content-Type" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, v := range p.Header[k] {
				b.WriteString(k + ": " + v + "\n")
			}
		}
		b.WriteString("\n")
		b.WriteString(p.Content)
		b.WriteString("\n")
	}
	b.WriteString("--" + Boundary + "--\n")
	return b.String(), nil
}
