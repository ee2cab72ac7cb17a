package localcluster

// SandboxImage: TEMPORARY until the images branch is merged (its pause image constant replaces it).
const SandboxImage = "registry.local/pause:lc"
