package pipeline

// RefineConfig is the refinement (refine.go), after the finalisation: the map teaches
// the encoder. The map decodes the training walks; states whose frames' mean images
// agree within their sampling noise show one class and form one pseudo-class
// (pseudoClasses), so every frame gets its state's pseudo-class, read from the map and
// not from labels. A codebook of one code per pseudo-class is fitted to them on the
// encoder's latents (fitCodebook), the encoder is trained to give each frame its
// pseudo-class as its token (the codebook fixed), the codebook is fitted again, and the
// map finalised again on the new tokens as the finalisation does. A map whose
// label-free verdict names a problem other than misread tokens (chmm.ProblemPredict)
// is not refined, and a refined map that is not resolved is dropped for the
// finalisation's.
type RefineConfig struct {
	// On runs the refinement (false; the refine preset: true). A run directory written
	// before it has none (false).
	On bool `json:"on" help:"after the finalisation, let the map teach the encoder its pseudo-classes and finalise again"`
	// Epochs is the passes over the training frames that teach the encoder
	// (DefaultRefineEpochs), each a checkpoint; 0: the codebook is only fitted to the
	// pseudo-classes on the encoder's latents.
	Epochs int `json:"epochs" range:"[0,100]" help:"passes over the training frames teaching the encoder (0: fit the codebook only)"`
	// Weight is the weight of the cross-entropy −log ρ(pseudo-class) against the
	// reconstruction (1; the joint phase's HMM term has weight λ = 1 likewise).
	Weight float64 `json:"weight" range:"[0,1000]" help:"weight of the pseudo-class cross-entropy against reconstruction"`
}

// DefaultRefineEpochs is DefaultRefine's Epochs.
const DefaultRefineEpochs = 2

// DefaultRefine returns the refinement's defaults: off, DefaultRefineEpochs epochs,
// weight 1. The teaching reads the warm-up's batch and rate and the joint phase's
// jitter.
func DefaultRefine() RefineConfig {
	return RefineConfig{Epochs: DefaultRefineEpochs, Weight: 1}
}

// Constants of the refinement.
const (
	// RefineBar is the protoDistance below which two groups of states show one class:
	// groups of one class are at about 1, whatever their visits; groups of two classes
	// grow with the visits (far above it at the visits of a place).
	RefineBar = 4.0
	// RefineMinVisits is the fewest frames of a state that pseudoClasses groups.
	RefineMinVisits = 20
	// RefineSameEffect is the protoEffect below which two groups show one class whatever
	// their protoDistance: mean images closer than 1 % of their frames' spread (the
	// encoder's selection, not a class, makes such a difference; results/notes/refine.md
	// gives both as measured).
	RefineSameEffect = 0.01
	// RefineMixBar is the mixtureNoise below which a group is a mixture of larger ones
	// and no class (results/notes/refine.md gives mixtures' and classes' as measured).
	RefineMixBar = 50.0
)
