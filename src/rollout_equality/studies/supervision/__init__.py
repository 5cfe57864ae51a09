"""Does supervision make the condition fail late? One small vision transformer, one data set, one budget, two objectives.

The paper's supervised vision transformers (DeiT-B, ViT-B/16) fail the condition late in depth, its self-supervised
DINOv2 models almost never; those models differ in more than the objective. This study changes the objective alone:
the same timm ViT (:mod:`.vit`), drawn from the same seed, is trained on the same 4,000 MNIST digits for the same
epochs with the same optimiser and augmentations (:mod:`.augment`), once by cross-entropy through CLS and once by
DINO's self-distillation (:mod:`.dino`); :mod:`.train` writes each as a timm checkpoint, the untrained initialisation
kept as a control. The workflow prepares them as models and measures them as it measures any model; :mod:`.report`
reads the records into rates by depth per objective, the late share of the failures and the accuracies that show each
model learned.
"""
