package creative

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"net/textproto"

	"github.com/hashicorp/go-retryablehttp"
)

// This file is the context of a call: one value, inside the call itself,
// that carries the call's httptrace hooks and the call, so that the hooks
// go-retryablehttp and net/http run for every call (before each attempt,
// after it, on a redirect) are plain functions that find the call in the
// request's context, instead of closures made anew for each call.

// callCtx is a call's context: its parent's, plus the call (callKey) and
// its httptrace hooks (under httptrace's own key), as
// httptrace.WithClientTrace would add them.
type callCtx struct {
	context.Context
	cl *call
}

// callKey is the key of the call in its context.
type callKey struct{}

// httptraceKey is the key httptrace.ContextClientTrace looks up, learnt by
// asking a context that writes down the key it is asked for; nil if
// httptrace looks its hooks up in some other way, and then every call
// uses httptrace.WithClientTrace.
var httptraceKey = func() any {
	var p keyProbe
	httptrace.ContextClientTrace(&p)
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	p.key = key
	return nil
}

// Value returns the call's hooks for httptrace, the call for callKey, and
// the parent's values for any other key.
func (c *callCtx) Value(key any) any {
	switch {
	case key == callKey{}:
		return c.cl
	case key == httptraceKey && key != nil:
		return &c.cl.trace
	}
	return c.Context.Value(key)
}

// withTrace returns ctx with the call's httptrace hooks and the call. When
// ctx holds hooks of its own (the caller traces its requests), they are
// composed with the call's as httptrace.WithClientTrace does; the hooks of
// another call (this one is made inside that one's middleware) are that
// call's alone, and are not: its requests are not this call's.
func (cl *call) withTrace(ctx context.Context) context.Context {
	cl.outer = outerTrace(ctx)
	if httptraceKey == nil || cl.outer != nil {
		ctx = httptrace.WithClientTrace(traceOnly(ctx, keyless(cl.outer, cl.redactor)), &cl.trace)
	}
	cl.ctx = callCtx{Context: ctx, cl: cl}
	return &cl.ctx
}

// hooked returns req with a context that holds the call's httptrace hooks.
// A middleware or an AttemptStart hook may give a request a context that
// is not derived from the call's (context.Background(), a context kept
// from another call): without the hooks, a request the service read whole
// and never answered would pass for one not sent, and be sent again. Hooks
// of the caller's added to a context derived from the call's (a tracer's,
// by a middleware or AttemptStart) are composed with the call's, and their
// header hook is given the key's header redacted too.
func (cl *call) hooked(req *http.Request) *http.Request {
	ctx := req.Context()
	if callOf(ctx) == cl {
		if t := httptrace.ContextClientTrace(ctx); t != &cl.trace {
			return req.WithContext(traceOnly(ctx, keyless(t, cl.redactor)))
		}
		return req
	}
	hooks := &httptrace.ClientTrace{WroteRequest: cl.tr.wroteRequest, WroteHeaders: cl.tr.wroteHeaders}
	ctx = httptrace.WithClientTrace(traceOnly(ctx, keyless(outerTrace(ctx), cl.redactor)), hooks)
	return req.WithContext(context.WithValue(ctx, callKey{}, cl))
}

// outerTrace returns the httptrace hooks of ctx that are not a call's own:
// those of ctx, or, when they are the hooks of the call ctx holds, those
// that call composed its own with.
func outerTrace(ctx context.Context) *httptrace.ClientTrace {
	t := httptrace.ContextClientTrace(ctx)
	if p := callOf(ctx); p != nil && t == &p.trace {
		return p.outer
	}
	return t
}

// keyless returns the caller's hooks t with a WroteHeaderField hook that
// is given the access key's header redacted: net/http hands the hook every
// header it writes, and a tracer may record them (otelhttptrace does). Its
// Got1xxResponse hook is given the header of an informational answer
// through r, as every byte from the network: a server may echo the key.
func keyless(t *httptrace.ClientTrace, r *redactor) *httptrace.ClientTrace {
	if t == nil || (t.WroteHeaderField == nil && t.Got1xxResponse == nil) {
		return t
	}
	k := *t
	if t.WroteHeaderField != nil {
		k.WroteHeaderField = func(name string, value []string) {
			if textproto.CanonicalMIMEHeaderKey(name) == headerAccessKey {
				value = []string{redacted}
			}
			t.WroteHeaderField(name, value)
		}
	}
	if t.Got1xxResponse != nil {
		k.Got1xxResponse = func(code int, h textproto.MIMEHeader) error {
			return t.Got1xxResponse(code, textproto.MIMEHeader(r.redactHeader(http.Header(h))))
		}
	}
	return &k
}

// traceOnly returns ctx whose httptrace hooks are t, for
// httptrace.WithClientTrace to compose with.
func traceOnly(ctx context.Context, t *httptrace.ClientTrace) context.Context {
	if httptraceKey == nil || httptrace.ContextClientTrace(ctx) == t {
		return ctx
	}
	return &withHooks{Context: ctx, t: t}
}

// withHooks is a context whose httptrace hooks are t.
type withHooks struct {
	context.Context
	t *httptrace.ClientTrace
}

func (c *withHooks) Value(key any) any {
	if key == httptraceKey {
		if c.t == nil {
			return nil
		}
		return c.t
	}
	return c.Context.Value(key)
}

// callOf returns the call whose context ctx is, or derives from.
func callOf(ctx context.Context) *call {
	cl, _ := ctx.Value(callKey{}).(*call)
	return cl
}

// errNoCall is the error of a hook that finds no call in the request's
// context: a middleware gave it a context not derived from its own.
var errNoCall = errors.New("creative: the request's context is not derived from the call's (a middleware must derive a new context from the request's own)")

// onAttemptHook is go-retryablehttp's RequestLogHook of every call.
func onAttemptHook(l retryablehttp.Logger, req *http.Request, i int) {
	if cl := callOf(req.Context()); cl != nil {
		cl.onAttempt(l, req, i)
	}
}

// checkRetryHook is go-retryablehttp's CheckRetry of every call.
func checkRetryHook(ctx context.Context, resp *http.Response, err error) (bool, error) {
	cl := callOf(ctx)
	if cl == nil {
		return false, errNoCall
	}
	return cl.checkRetry(ctx, resp, err)
}

// checkRedirectHook is the CheckRedirect of every call's http.Client.
func checkRedirectHook(req *http.Request, via []*http.Request) error {
	cl := callOf(req.Context())
	if cl == nil {
		return errNoCall
	}
	return cl.tr.checkRedirect(req, via)
}
