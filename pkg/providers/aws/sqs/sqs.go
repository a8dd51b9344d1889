// Package sqs reads the interruption queue: EventBridge delivers EC2 and AWS
// Health events into an SQS queue, and the interruption controller long-polls
// it through this provider. The queue is configured by name
// (INTERRUPTION_QUEUE); its URL is looked up once and cached.
package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Receive parameters (upstream's): a batch of up to 10 messages, a 20 s long
// poll, and messages hidden from other receivers for 20 s while handled.
const (
	MaxMessages       = 10
	WaitTimeSeconds   = 20
	VisibilityTimeout = 20
)

// Message is one received queue message.
type Message struct {
	ID            string
	ReceiptHandle string
	Body          string
	// SentTime is when the message entered the queue (attribute
	// SentTimestamp); zero when the queue did not report it.
	SentTime time.Time
}

// Provider receives and deletes messages of one queue.
type Provider struct {
	client *sqs.Client
	name   string

	mu  sync.Mutex
	url string
}

// NewProvider returns a provider for the queue called name.
func NewProvider(client *sqs.Client, name string) *Provider {
	return &Provider{client: client, name: name}
}

// Name is the queue name.
func (p *Provider) Name() string { return p.name }

// URL returns the queue URL, asking SQS (GetQueueUrl) until it answered once.
// A missing queue is an error that names it.
func (p *Provider) URL(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.url != "" {
		return p.url, nil
	}
	out, err := p.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(p.name)})
	if err != nil {
		var missing *sqstypes.QueueDoesNotExist
		if errors.As(err, &missing) {
			return "", fmt.Errorf("interruption queue %q does not exist (INTERRUPTION_QUEUE): %w", p.name, err)
		}
		return "", fmt.Errorf("getting the URL of interruption queue %q: %w", p.name, err)
	}
	p.url = aws.ToString(out.QueueUrl)
	return p.url, nil
}

// forget drops the cached URL, so that a queue deleted and created again
// (with the same name, hence URL, on AWS) is looked up afresh.
func (p *Provider) forget() {
	p.mu.Lock()
	p.url = ""
	p.mu.Unlock()
}

// Receive long-polls for up to MaxMessages messages, waiting up to
// WaitTimeSeconds when the queue is empty.
func (p *Provider) Receive(ctx context.Context) ([]Message, error) {
	url, err := p.URL(ctx)
	if err != nil {
		return nil, err
	}
	out, err := p.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         MaxMessages,
		WaitTimeSeconds:             WaitTimeSeconds,
		VisibilityTimeout:           VisibilityTimeout,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		p.forgetIfMissing(err)
		return nil, fmt.Errorf("receiving from interruption queue %q: %w", p.name, err)
	}
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		msg := Message{ID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body)}
		if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			msg.SentTime = time.UnixMilli(ms)
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// Delete removes a handled message from the queue.
func (p *Provider) Delete(ctx context.Context, m Message) error {
	url, err := p.URL(ctx)
	if err != nil {
		return err
	}
	if _, err := p.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(m.ReceiptHandle)}); err != nil {
		p.forgetIfMissing(err)
		return fmt.Errorf("deleting message %s from interruption queue %q: %w", m.ID, p.name, err)
	}
	return nil
}

func (p *Provider) forgetIfMissing(err error) {
	var missing *sqstypes.QueueDoesNotExist
	if errors.As(err, &missing) {
		p.forget()
	}
}
