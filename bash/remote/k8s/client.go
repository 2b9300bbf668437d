package k8s

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// coreClient is the core/v1 API, as much of it as the executor calls:
// pods and their events. client-go's typed clients would link (and
// initialise, at every start of any program that links this package)
// the scheme of every API group; this one knows core/v1 alone.
type coreClient struct{ rc *rest.RESTClient }

// scheme knows core/v1 and the meta types its API answers with. It is
// made on first use: a dsh-bash that reaches no cluster (a jail's agent,
// say) does not pay for it at its start.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
})

// paramCodec encodes options (PodExecOptions, ListOptions) as a
// request's query.
var paramCodec = sync.OnceValue(func() runtime.ParameterCodec { return runtime.NewParameterCodec(scheme()) })

// newCoreClient makes the client of config's API server.
func newCoreClient(config *rest.Config) (*coreClient, error) {
	c := rest.CopyConfig(config)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme()).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return &coreClient{rc: rc}, nil
}

// RESTClient is the REST client, for exec streams.
func (c *coreClient) RESTClient() rest.Interface { return c.rc }

// Pods are the pods of namespace ns.
func (c *coreClient) Pods(ns string) podClient { return podClient{c.rc, ns} }

// Events are the events of namespace ns.
func (c *coreClient) Events(ns string) eventClient { return eventClient{c.rc, ns} }

type podClient struct {
	rc *rest.RESTClient
	ns string
}

func (p podClient) req(r *rest.Request) *rest.Request {
	return r.Namespace(p.ns).Resource("pods")
}

func (p podClient) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.req(p.rc.Post()).VersionedParams(&opts, paramCodec()).Body(pod).Do(ctx).Into(out)
	return out, err
}

func (p podClient) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.req(p.rc.Get()).Name(name).VersionedParams(&opts, paramCodec()).Do(ctx).Into(out)
	return out, err
}

func (p podClient) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := p.req(p.rc.Get()).VersionedParams(&opts, paramCodec()).Do(ctx).Into(out)
	return out, err
}

func (p podClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return p.req(p.rc.Get()).VersionedParams(&opts, paramCodec()).Watch(ctx)
}

func (p podClient) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return p.req(p.rc.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

func (p podClient) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := p.req(p.rc.Patch(pt)).Name(name).VersionedParams(&opts, paramCodec()).Body(data).Do(ctx).Into(out)
	return out, err
}

type eventClient struct {
	rc *rest.RESTClient
	ns string
}

func (e eventClient) List(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	out := &corev1.EventList{}
	err := e.rc.Get().Namespace(e.ns).Resource("events").VersionedParams(&opts, paramCodec()).Do(ctx).Into(out)
	return out, err
}
