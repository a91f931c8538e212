"""The tiny image world: procedurally drawn, captioned images; a tiny diffusers text-to-image model, peft LoRAs
and a catalog trained on them by a seeded recipe; and an image judge trained separately, from pixels.

It exists so that manta's composer can be evaluated on rendered images, end to end, on a CPU and with
nothing downloaded: the composer never sees the judge, and the judge never sees the composer's embeddings.
"""
