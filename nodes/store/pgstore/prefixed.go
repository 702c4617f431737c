package pgstore

import (
	"context"
	"fmt"

	"github.com/agiraph/agiraph/checkpoint"
)

// prefixed is a saver that keeps the threads of one agent apart from the others' in a saver they
// share: it prefixes thread IDs with the agent's id.
type prefixed struct {
	checkpoint.StepSaver
	prefix string
}

// in is cfg in the shared saver. A config without a thread stays without one, for the saver to
// refuse as it refuses it.
func (p prefixed) in(cfg checkpoint.Config) checkpoint.Config {
	if cfg.ThreadID != "" {
		cfg.ThreadID = p.prefix + cfg.ThreadID
	}
	return cfg
}

// SyncsCommits says what the shared saver says (see checkpoint.CommitSyncer).
func (p prefixed) SyncsCommits() bool { return checkpoint.SyncsCommits(p.StepSaver) }

func (p prefixed) out(cfg checkpoint.Config) checkpoint.Config {
	cfg.ThreadID = cfg.ThreadID[len(p.prefix):]
	return cfg
}

// Put stores cp under the agent's thread.
func (p prefixed) Put(ctx context.Context, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	got, err := p.StepSaver.Put(ctx, p.in(cfg), cp)
	if err != nil {
		return got, err
	}
	return p.out(got), nil
}

// PutWrites records writes of the agent's thread.
func (p prefixed) PutWrites(ctx context.Context, cfg checkpoint.Config, writes []checkpoint.Write) error {
	return p.StepSaver.PutWrites(ctx, p.in(cfg), writes)
}

// Get returns a checkpoint of the agent's thread.
func (p prefixed) Get(ctx context.Context, cfg checkpoint.Config) (*checkpoint.Tuple, error) {
	t, err := p.StepSaver.Get(ctx, p.in(cfg))
	if err != nil {
		return nil, err
	}
	t.Config = p.out(t.Config)
	return t, nil
}

// List returns the checkpoints of the agent's thread.
func (p prefixed) List(ctx context.Context, cfg checkpoint.Config, opts checkpoint.ListOptions) ([]checkpoint.Tuple, error) {
	ts, err := p.StepSaver.List(ctx, p.in(cfg), opts)
	for i := range ts {
		ts[i].Config = p.out(ts[i].Config)
	}
	return ts, err
}

// PutStep saves a step of the agent's thread.
func (p prefixed) PutStep(ctx context.Context, parent checkpoint.Config, writes []checkpoint.Write, cfg checkpoint.Config, cp checkpoint.Checkpoint) (checkpoint.Config, error) {
	got, err := p.StepSaver.PutStep(ctx, p.in(parent), writes, p.in(cfg), cp)
	if err != nil {
		return got, err
	}
	return p.out(got), nil
}

// DeleteThread removes the agent's thread.
func (p prefixed) DeleteThread(ctx context.Context, threadID string) error {
	return p.StepSaver.DeleteThread(ctx, p.prefix+threadID)
}

// PatchMetadata merges meta into a checkpoint of the agent's thread.
func (p prefixed) PatchMetadata(ctx context.Context, cfg checkpoint.Config, meta map[string]string) error {
	mp, ok := p.StepSaver.(checkpoint.MetadataPatcher)
	if !ok {
		return fmt.Errorf("pgstore: the saver %T cannot patch a checkpoint's metadata", p.StepSaver)
	}
	return mp.PatchMetadata(ctx, p.in(cfg), meta)
}
