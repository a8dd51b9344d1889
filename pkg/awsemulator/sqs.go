package awsemulator

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// sqsOps is the SQS operation table (AWS JSON 1.0, X-Amz-Target AmazonSQS.<Op>; errors
// also carry the awsQuery code in X-Amzn-Query-Error, as SQS sends them).
func sqsOps() map[string]handler {
	return map[string]handler{
		"CreateQueue":        sqsCreateQueue,
		"GetQueueUrl":        sqsGetQueueURL,
		"SendMessage":        sqsSendMessage,
		"ReceiveMessage":     sqsReceiveMessage,
		"DeleteMessage":      sqsDeleteMessage,
		"DeleteQueue":        sqsDeleteQueue,
		"PurgeQueue":         sqsPurgeQueue,
		"GetQueueAttributes": sqsGetQueueAttributes,
		"ListQueues":         sqsListQueues,
	}
}

const defaultVisibilityTimeout = 30 * time.Second

type queue struct {
	name       string
	attributes map[string]string
	visibility time.Duration
	messages   []*message    // in send order
	notify     chan struct{} // closed (and replaced) when a message is sent
	seq        int
	created    time.Time
}

type message struct {
	id, body, md5 string
	sent          time.Time
	visibleAt     time.Time
	receives      int
	firstReceive  time.Time
	receipt       string // of the latest receive
}

var queueNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}(\.fifo)?$`)

func noSuchQueue() *apiError {
	return &apiError{Status: 400, Code: "QueueDoesNotExist", Message: "The specified queue does not exist.",
		QueryCode: "AWS.SimpleQueueService.NonExistentQueue"}
}

func (e *Emulator) queueURL(name string) string {
	return e.endpoint + "/" + e.opts.AccountID + "/" + name
}

// queueByURL finds a queue by the last path segment of its URL (so URLs in AWS's own
// format, https://sqs.<region>.amazonaws.com/<account>/<name>, work too).
func (s *state) queueByURL(u string) *queue {
	if u == "" {
		return nil
	}
	return s.queues[u[strings.LastIndex(u, "/")+1:]]
}

func (s *state) createQueue(name string, attrs map[string]string) (*queue, *apiError) {
	if !queueNamePattern.MatchString(name) {
		return nil, &apiError{Status: 400, Code: "InvalidParameterValue", QueryCode: "InvalidParameterValue",
			Message: "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"}
	}
	if q := s.queues[name]; q != nil {
		return q, nil
	}
	q := &queue{name: name, attributes: cloneTags(attrs), visibility: defaultVisibilityTimeout, notify: make(chan struct{}), created: time.Now()}
	if v, ok := attrs["VisibilityTimeout"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 43200 {
			return nil, &apiError{Status: 400, Code: "InvalidAttributeValue", QueryCode: "InvalidAttributeValue",
				Message: "Invalid value for the parameter VisibilityTimeout."}
		}
		q.visibility = time.Duration(n) * time.Second
	}
	s.queues[name] = q
	return q, nil
}

func (q *queue) send(body string, delay time.Duration, now time.Time) *message {
	q.seq++
	h := hashHex(32, "sqs", q.name, strconv.Itoa(q.seq))
	sum := md5.Sum([]byte(body))
	m := &message{
		id:   fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]),
		body: body, md5: hex.EncodeToString(sum[:]), sent: now, visibleAt: now.Add(delay),
	}
	q.messages = append(q.messages, m)
	close(q.notify)
	q.notify = make(chan struct{})
	return m
}

// CreateQueue creates an SQS queue (no-op if it exists) and returns its URL.
func (e *Emulator) CreateQueue(name string) (string, error) {
	var err *apiError
	e.locked(func(s *state) { _, err = s.createQueue(name, nil) })
	if err != nil {
		return "", err
	}
	return e.queueURL(name), nil
}

// SendQueueMessage enqueues body on the named queue, as SendMessage would, and returns
// the message ID; tests use it to deliver EventBridge-style interruption events.
func (e *Emulator) SendQueueMessage(queueName, body string) (string, error) {
	var id string
	var err error
	e.locked(func(s *state) {
		q := s.queues[queueName]
		if q == nil {
			err = fmt.Errorf("queue %s does not exist", queueName)
			return
		}
		id = q.send(body, 0, time.Now()).id
	})
	return id, err
}

// QueueDepth is how many messages the queue holds: visible now and in flight.
func (e *Emulator) QueueDepth(queueName string) (visible, inFlight int) {
	now := time.Now()
	e.locked(func(s *state) {
		if q := s.queues[queueName]; q != nil {
			for _, m := range q.messages {
				if m.visibleAt.After(now) {
					inFlight++
				} else {
					visible++
				}
			}
		}
	})
	return visible, inFlight
}

func sqsCreateQueue(c *call) (any, error) {
	var in struct {
		QueueName  string
		Attributes map[string]string
	}
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	var apiErr *apiError
	c.e.locked(func(s *state) { _, apiErr = s.createQueue(in.QueueName, in.Attributes) })
	if apiErr != nil {
		return nil, apiErr
	}
	return map[string]string{"QueueUrl": c.e.queueURL(in.QueueName)}, nil
}

func sqsGetQueueURL(c *call) (any, error) {
	var in struct{ QueueName string }
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	found := false
	c.e.locked(func(s *state) { found = s.queues[in.QueueName] != nil })
	if !found {
		return nil, noSuchQueue()
	}
	return map[string]string{"QueueUrl": c.e.queueURL(in.QueueName)}, nil
}

func sqsSendMessage(c *call) (any, error) {
	var in struct {
		QueueUrl     string
		MessageBody  string
		DelaySeconds int
	}
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	if in.MessageBody == "" {
		return nil, &apiError{Status: 400, Code: "MissingParameter", QueryCode: "MissingParameter", Message: "The request must contain the parameter MessageBody."}
	}
	if in.DelaySeconds < 0 || in.DelaySeconds > 900 {
		return nil, &apiError{Status: 400, Code: "InvalidParameterValue", QueryCode: "InvalidParameterValue", Message: "Value for parameter DelaySeconds is invalid. Reason: must be between 0 and 900."}
	}
	var m *message
	c.e.locked(func(s *state) {
		if q := s.queueByURL(in.QueueUrl); q != nil {
			m = q.send(in.MessageBody, time.Duration(in.DelaySeconds)*time.Second, time.Now())
		}
	})
	if m == nil {
		return nil, noSuchQueue()
	}
	return map[string]string{"MessageId": m.id, "MD5OfMessageBody": m.md5}, nil
}

type sqsMessage struct {
	MessageId     string
	ReceiptHandle string
	MD5OfBody     string
	Body          string
	Attributes    map[string]string `json:",omitempty"`
}

// sqsReceiveMessage long-polls up to WaitTimeSeconds (0..20) for up to
// MaxNumberOfMessages (1..10) messages, hiding them for VisibilityTimeout.
func sqsReceiveMessage(c *call) (any, error) {
	var in struct {
		QueueUrl                    string
		MaxNumberOfMessages         *int
		VisibilityTimeout           *int
		WaitTimeSeconds             *int
		AttributeNames              []string
		MessageSystemAttributeNames []string
	}
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	maxN := 1
	if in.MaxNumberOfMessages != nil {
		maxN = *in.MaxNumberOfMessages
		if maxN < 1 || maxN > 10 {
			return nil, &apiError{Status: 400, Code: "InvalidParameterValue", QueryCode: "InvalidParameterValue",
				Message: fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", maxN)}
		}
	}
	wait := time.Duration(0)
	if in.WaitTimeSeconds != nil {
		if *in.WaitTimeSeconds < 0 || *in.WaitTimeSeconds > 20 {
			return nil, &apiError{Status: 400, Code: "InvalidParameterValue", QueryCode: "InvalidParameterValue",
				Message: fmt.Sprintf("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *in.WaitTimeSeconds)}
		}
		wait = time.Duration(*in.WaitTimeSeconds) * time.Second
	}
	attrs := nameSet(append(in.AttributeNames, in.MessageSystemAttributeNames...)...)
	deadline := time.Now().Add(wait)
	for {
		var out []sqsMessage
		var notify chan struct{}
		var nextVisible time.Time
		exists := false
		now := time.Now()
		c.e.locked(func(s *state) {
			q := s.queueByURL(in.QueueUrl)
			if q == nil {
				return
			}
			exists = true
			visibility := q.visibility
			if in.VisibilityTimeout != nil {
				visibility = time.Duration(*in.VisibilityTimeout) * time.Second
			}
			for _, m := range q.messages {
				if m.visibleAt.After(now) {
					if nextVisible.IsZero() || m.visibleAt.Before(nextVisible) {
						nextVisible = m.visibleAt
					}
					continue
				}
				if len(out) == maxN {
					break
				}
				m.receives++
				if m.firstReceive.IsZero() {
					m.firstReceive = now
				}
				m.visibleAt = now.Add(visibility)
				m.receipt = hashHex(16, m.id) + "-" + strconv.Itoa(m.receives) + "-" + m.id
				out = append(out, sqsMessage{MessageId: m.id, ReceiptHandle: m.receipt, MD5OfBody: m.md5, Body: m.body,
					Attributes: messageAttributes(m, attrs, c.e.opts.AccountID)})
			}
			notify = q.notify
		})
		if !exists {
			return nil, noSuchQueue()
		}
		if len(out) > 0 {
			return map[string]any{"Messages": out}, nil
		}
		if !now.Before(deadline) {
			return struct{}{}, nil // SQS leaves Messages out when there are none
		}
		sleep := deadline.Sub(now)
		if !nextVisible.IsZero() && nextVisible.Sub(now) < sleep {
			sleep = nextVisible.Sub(now)
		}
		t := time.NewTimer(sleep)
		select {
		case <-notify:
		case <-t.C:
		case <-c.r.Context().Done():
			t.Stop()
			return struct{}{}, nil
		case <-c.e.done:
			t.Stop()
			return struct{}{}, nil
		}
		t.Stop()
	}
}

func messageAttributes(m *message, want map[string]bool, account string) map[string]string {
	all := map[string]string{
		"SenderId":                         account,
		"SentTimestamp":                    strconv.FormatInt(m.sent.UnixMilli(), 10),
		"ApproximateReceiveCount":          strconv.Itoa(m.receives),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
	}
	out := map[string]string{}
	for k, v := range all {
		if want["All"] || want[k] {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func sqsDeleteMessage(c *call) (any, error) {
	var in struct{ QueueUrl, ReceiptHandle string }
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	var apiErr *apiError
	c.e.locked(func(s *state) {
		q := s.queueByURL(in.QueueUrl)
		if q == nil {
			apiErr = noSuchQueue()
			return
		}
		parts := strings.SplitN(in.ReceiptHandle, "-", 3)
		if len(parts) != 3 {
			apiErr = &apiError{Status: 400, Code: "ReceiptHandleIsInvalid", QueryCode: "ReceiptHandleIsInvalid",
				Message: fmt.Sprintf("The input receipt handle \"%s\" is not a valid receipt handle.", in.ReceiptHandle)}
			return
		}
		// As SQS: deleting an already deleted message (or with an older handle) succeeds.
		for i, m := range q.messages {
			if m.id == parts[2] {
				q.messages = append(q.messages[:i], q.messages[i+1:]...)
				return
			}
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	return nil, nil
}

func sqsDeleteQueue(c *call) (any, error) {
	var in struct{ QueueUrl string }
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	found := false
	c.e.locked(func(s *state) {
		if q := s.queueByURL(in.QueueUrl); q != nil {
			found = true
			close(q.notify)
			delete(s.queues, q.name)
		}
	})
	if !found {
		return nil, noSuchQueue()
	}
	return nil, nil
}

func sqsPurgeQueue(c *call) (any, error) {
	var in struct{ QueueUrl string }
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	found := false
	c.e.locked(func(s *state) {
		if q := s.queueByURL(in.QueueUrl); q != nil {
			found = true
			q.messages = nil
		}
	})
	if !found {
		return nil, noSuchQueue()
	}
	return nil, nil
}

func sqsGetQueueAttributes(c *call) (any, error) {
	var in struct {
		QueueUrl       string
		AttributeNames []string
	}
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	var out map[string]string
	now := time.Now()
	c.e.locked(func(s *state) {
		q := s.queueByURL(in.QueueUrl)
		if q == nil {
			return
		}
		visible, inFlight := 0, 0
		for _, m := range q.messages {
			if m.visibleAt.After(now) {
				inFlight++
			} else {
				visible++
			}
		}
		all := map[string]string{
			"QueueArn":                              "arn:aws:sqs:" + s.opts.Region + ":" + s.opts.AccountID + ":" + q.name,
			"ApproximateNumberOfMessages":           strconv.Itoa(visible),
			"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(inFlight),
			"VisibilityTimeout":                     strconv.Itoa(int(q.visibility / time.Second)),
			"CreatedTimestamp":                      strconv.FormatInt(q.created.Unix(), 10),
		}
		for k, v := range q.attributes {
			if _, ok := all[k]; !ok {
				all[k] = v
			}
		}
		want := nameSet(in.AttributeNames...)
		out = map[string]string{}
		for k, v := range all {
			if want["All"] || want[k] {
				out[k] = v
			}
		}
	})
	if out == nil {
		return nil, noSuchQueue()
	}
	return map[string]any{"Attributes": out}, nil
}

func sqsListQueues(c *call) (any, error) {
	var in struct{ QueueNamePrefix string }
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	urls := []string{}
	c.e.locked(func(s *state) {
		for _, name := range sortedKeys(s.queues) {
			if strings.HasPrefix(name, in.QueueNamePrefix) {
				urls = append(urls, c.e.queueURL(name))
			}
		}
	})
	return map[string]any{"QueueUrls": urls}, nil
}
