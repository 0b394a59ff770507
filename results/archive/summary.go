package archive

import (
	"context"
	"encoding/hex"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/results/report"
)

// Summary is a campaign summarised a point at a time (Reader.Summarize):
// its points and, to pair them, the ids of each point's records (12
// bytes a task), which Compare reads again a scenario at a time. This
// is the coordinator's streaming finalisation (aggregate.SummarizePoint
// then aggregate.ComparePaired) over an archive: its points equal
// aggregate.Summarize's over Load, without holding every record.
type Summary struct {
	Points []aggregate.Point
	ids    [][][12]byte
	r      *Reader
}

// Summarize reads the campaign a point at a time and summarises each
// point as it is read; the points are not paired yet (Compare).
func (r *Reader) Summarize(ctx context.Context) (*Summary, error) {
	s := &Summary{r: r}
	if r.Campaign != nil && r.Campaign.Points > 0 {
		// Sized once: grown by appending, the slices kept up to as
		// much again in slack (27 MB of 10^5 points' summaries).
		s.Points = make([]aggregate.Point, 0, r.Campaign.Points)
		s.ids = make([][][12]byte, 0, r.Campaign.Points)
	}
	err := r.EachPoint(ctx, nil, func(p PointRecords) error {
		s.Points = append(s.Points, aggregate.SummarizePoint(p.Tasks, p.Records))
		var ids [][12]byte
		for _, t := range p.Tasks {
			if b, ok := taskBytes(t.ID); ok && p.Records[t.ID] != nil {
				ids = append(ids, b)
			}
		}
		s.ids = append(s.ids, ids)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Compare pairs the points with the series baseline names
// (aggregate.ComparePaired), reading the records of one scenario at a
// time. An unknown baseline is an error naming the series there are.
func (s *Summary) Compare(ctx context.Context, baseline string) error {
	return aggregate.ComparePaired(s.Points, baseline, func(idx []int) (map[int][]*record.Record, error) {
		out := make(map[int][]*record.Record, len(idx))
		for _, k := range idx {
			tids := make([]string, len(s.ids[k]))
			for i, b := range s.ids[k] {
				tids[i] = hex.EncodeToString(b[:])
			}
			for i, o := range ReadTasks(ctx, s.r.st, s.r.ID, tids) {
				if o.Err != nil {
					return nil, o.Err
				}
				if s.r.Modified[tids[i]] == "" {
					out[k] = append(out[k], o.Rec)
				}
			}
		}
		return out, ctx.Err()
	})
}

// CompareDefault pairs the points as Archive.Points does: with the
// spec's baseline (its compare block), else the first policy; a
// campaign whose series resolve neither is left unpaired.
func (s *Summary) CompareDefault(ctx context.Context) error {
	for _, b := range []string{s.r.Spec.BaselineOf(), ""} {
		if _, err := aggregate.BaselineLabel(s.Points, b); err == nil {
			return s.Compare(ctx, b)
		}
	}
	return nil
}

// ReportRecordsMax is the largest campaign (in tasks) whose report has
// the per-replication table, and so is built from every record at once:
// the coordinator's finalisation and `msjfarm report` apply the same
// rule. A larger campaign's report is built from its points summarised a
// point at a time; its replications are in the stored records (and in
// an exported archive), a table a reader would not page through anyway.
const ReportRecordsMax = 4096

// ReportCampaign reads the campaign for report.Render (see
// ReportRecordsMax) and counts its records.
func (r *Reader) ReportCampaign(ctx context.Context) (report.Campaign, int, error) {
	if r.Campaign == nil || r.Campaign.Len() <= ReportRecordsMax {
		a, err := r.Load(ctx)
		if err != nil {
			return report.Campaign{}, 0, err
		}
		return a.ReportCampaign(), len(a.Records), nil
	}
	s, err := r.Summarize(ctx)
	if err != nil {
		return report.Campaign{}, 0, err
	}
	if err := s.CompareDefault(ctx); err != nil {
		return report.Campaign{}, 0, err
	}
	n := 0
	for _, ids := range s.ids {
		n += len(ids)
	}
	return report.Campaign{Points: s.Points, Manifest: r.ManifestJSON}, n, nil
}
