package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dshgo/dsh/bash/remote"
)

// pool keeps warm pods: running, the executor found or uploaded and
// dialled (its handshake done), labelled LabelSession "warm" until a
// session claims one.
type pool struct {
	e      *Executor
	n      int
	ctx    context.Context // ends at close: pods being made are deleted
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	ready    []*ready
	making   int
	failures int // in a row: the next try waits longer
	retry    *time.Timer
	closed   bool
	changed  chan struct{} // closed, and made anew, when ready changes
}

func newPool(e *Executor, n int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{e: e, n: n, ctx: ctx, cancel: cancel, changed: make(chan struct{})}
}

// fill starts making pods until n are ready or being made.
func (p *pool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && p.retry == nil && len(p.ready)+p.making < p.n {
		p.making++
		p.wg.Add(1)
		go p.make()
	}
}

// make makes one warm pod. After a failure the pool waits before the next
// try, twice as long each time up to a minute.
func (p *pool) make() {
	defer p.wg.Done()
	r, err := p.e.start(p.ctx, warm)
	if err == nil {
		if r.ex, err = p.dial(r); err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = errors.Join(err, p.e.pods.delete(ctx, r.pod.Name))
			cancel()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.making--
	switch {
	case err != nil && p.closed:
	case err != nil:
		p.failures++
		wait := min(time.Second<<min(p.failures-1, 6), time.Minute)
		p.e.logf("a warm pod did not start (next try in %v): %v", wait, err)
		if p.retry == nil {
			p.retry = time.AfterFunc(wait, func() {
				p.mu.Lock()
				p.retry = nil
				p.mu.Unlock()
				p.fill()
			})
		}
	case p.closed:
		p.discard(r)
	default:
		p.failures = 0
		p.ready = append(p.ready, r)
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// dial dials a warm pod's executor, so that its session's first call
// waits for no handshake, nor for the executor there to start.
func (p *pool) dial(r *ready) (*remote.Executor, error) {
	opts := p.e.hostOptions(r.pod.Name)
	return remote.Dial(p.ctx, p.e.dialer(r), &opts)
}

// discard closes a warm pod's executor and deletes the pod, in the
// background.
func (p *pool) discard(r *ready) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if r.ex != nil {
			r.ex.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.e.pods.delete(ctx, r.pod.Name); err != nil {
			p.e.logf("%v", err)
		}
	}()
}

// claim takes a warm pod for owner's session: relabelled in one request
// that fails if another has claimed it meanwhile (this server or another
// sharing the namespace). It returns nil when no warm pod is ready.
func (p *pool) claim(ctx context.Context, owner string) *ready {
	defer p.fill()
	for {
		p.mu.Lock()
		if len(p.ready) == 0 {
			p.mu.Unlock()
			return nil
		}
		r := p.ready[0]
		p.ready = p.ready[1:]
		p.mu.Unlock()
		err := p.e.claimPod(ctx, r.pod.Name, sessionLabel(owner))
		if err == nil {
			return r
		}
		if !errors.Is(err, errClaimed) {
			p.discard(r)
		} else {
			r.ex.Close() // its claimer has its own
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// errClaimed is a warm pod another claim took first.
var errClaimed = errors.New("the warm pod was claimed by another session")

// claimPod relabels a warm pod as session's. The patch tests that the
// label is still "warm", so of two claims at once one fails with
// errClaimed.
func (e *Executor) claimPod(ctx context.Context, name, session string) error {
	path := "/metadata/labels/" + jsonPointerEscape(LabelSession)
	patch, _ := json.Marshal([]map[string]string{
		{"op": "test", "path": path, "value": warm},
		{"op": "replace", "path": path, "value": session},
	})
	_, err := e.client.Pods(e.opts.Namespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if apierrors.IsInvalid(err) {
		return errClaimed
	}
	return err
}

// close stops filling, deletes the warm pods and waits for the pods being
// made (deleted as they fail).
func (p *pool) close() error {
	p.mu.Lock()
	p.closed = true
	if p.retry != nil {
		p.retry.Stop()
		p.retry = nil
	}
	left := p.ready
	p.ready = nil
	p.mu.Unlock()
	p.cancel()
	for _, r := range left {
		p.discard(r)
	}
	p.wg.Wait()
	return nil
}

// jsonPointerEscape escapes a key for a JSON pointer (RFC 6901).
func jsonPointerEscape(s string) string {
	out := make([]byte, 0, len(s)+2)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
