package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/msjfarm/msjfarm/internal/protocol"
)

// submittedSpec resolves a submission's sweep: the spec it carries inline
// (key "": Submit stores it under its content key once it is validated),
// or the one stored at its SpecKey (read and checked against its content
// hash). The campaign's KV entry records that key instead of the spec: a
// resumed coordinator reads it from there (loadSpec).
func (co *Coordinator) submittedSpec(ctx context.Context, req *protocol.SubmitRequest) (string, error) {
	switch {
	case req.Spec != nil:
		return "", nil
	case req.SpecKey != "":
		f, err := protocol.GetSpec(ctx, co.o.Store, req.SpecKey)
		if err != nil {
			return "", fmt.Errorf("submit: %w", err)
		}
		req.Spec = f
		return req.SpecKey, nil
	}
	return "", errors.New("submit: no sweep")
}

// loadSpec gives a campaign read from the KV its spec: inline in entries
// written before specs moved to storage, else read by its key.
func (co *Coordinator) loadSpec(ctx context.Context, c *campaign) error {
	if c.st.Spec != nil {
		return nil
	}
	if c.st.SpecKey == "" {
		return errors.New("its state has neither a spec nor a spec key")
	}
	f, err := protocol.GetSpec(ctx, co.o.Store, c.st.SpecKey)
	if err != nil {
		return err
	}
	c.st.Spec = f
	return nil
}
