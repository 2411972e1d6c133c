"""Precision on real code: the default rules over public PyTorch projects at pinned commits.

Each project is extracted (``git archive``) from a bare mirror brought in with the session's
``fetch`` tool (``/work/.mirror/<owner>+<name>/repo``, or ``$TORCHLINT_MIRRORS``) into
``bench/.corpus/real/<name>``. Projects whose mirror is absent are skipped with a note, so the
script runs anywhere (CI has no network and no mirrors).

Every finding is looked up in ``bench/corpus_judgements/<project>.tsv`` (project, path, line, code,
verdict, reason), where each line was written by reading the code as the project's maintainer
would: TRUE (they would fix it), FALSE (wrong), NOISE (technically possible, they would close
the report). Findings with no line there are listed as unjudged; judged TRUE findings that are
no longer reported are listed as lost.

    python bench/corpus.py                      # tables: per project, per rule
    python bench/corpus.py --unjudged           # also print unjudged findings as TSV rows to judge
    python bench/corpus.py --project nanogpt    # one project
    python bench/corpus.py --markdown           # the README tables
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from torchlint.api import check_files
from torchlint.config import Settings

HERE = Path(__file__).resolve().parent
EXTRACTED = HERE / ".corpus" / "real"
JUDGEMENTS = HERE / "corpus_judgements"  # one <project>.tsv per project
VERDICTS = ("TRUE", "FALSE", "NOISE")


@dataclass(frozen=True)
class Project:
    name: str
    repo: str  # owner/name on GitHub
    commit: str
    paths: tuple[str, ...]  # what is analysed, relative to the repository root
    exclude: tuple[str, ...] = ("tests", "test", "docs")
    notebooks: bool = False  # also its Jupyter notebooks (for projects that live in them)


PROJECTS = (
    # The eight projects of the first outside judgement (issue 12).
    Project("nanogpt", "karpathy/nanoGPT", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291", (".",)),
    Project("timm-train", "huggingface/pytorch-image-models", "aa4b5850c1543fa488abf260f18390eda46cf85d",
            ("train.py", "validate.py", "inference.py", "timm/loss", "timm/optim", "timm/scheduler",
             "timm/utils", "timm/task")),
    Project("lightning-examples", "Lightning-AI/pytorch-lightning", "7f0c3436cd3f6ad3753125672024fc415cbcb414",
            ("examples",)),
    Project("denoising-diffusion", "lucidrains/denoising-diffusion-pytorch",
            "faed4db28e724735323fa91c70aa9b28a6e1cbac", (".",)),
    Project("pytorch-examples", "pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8", (".",)),
    Project("cleanrl", "vwxyzjn/cleanrl", "fe8d8a03c41a7ef5b523e2e354bd01c363e786bb", ("cleanrl",)),
    Project("pyg-examples", "pyg-team/pytorch_geometric", "5c6461b2305ad068a6d61165b3c55852a11aaa41",
            ("examples",)),
    Project("guided-diffusion", "openai/guided-diffusion", "22e0df8183507e13a7813f8d38d51b072ca1e67c", (".",)),
    # Others: a transformers-style library, LLM fine-tuning, a detection code base, a minimal GPT.
    Project("peft", "huggingface/peft", "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40", ("src/peft", "examples")),
    Project("alpaca-lora", "tloen/alpaca-lora", "8bb8579e403dc78e37fe81ffbb253c413007323f", (".",)),
    Project("yolov5", "ultralytics/yolov5", "5081342f04fb287fc2e5f2b5a4e06752b7937b1c", (".",)),
    Project("mingpt", "karpathy/minGPT", "37baab71b9abea1b76ab957409a1cc2fbfba8a26", (".",)),
    # Self-supervised and diffusion training code (added in stop 32): AMP, gradient accumulation,
    # teacher-student updates, EMA.
    Project("mae", "facebookresearch/mae", "efb2a8062c206524e35e47d04501ed4f544c0ae8", (".",)),
    Project("dino", "facebookresearch/dino", "7c446df5b9f45747937fb0d72314eb9f7b66930a", (".",)),
    Project("dit", "facebookresearch/DiT", "ed81ce2229091fd4ecc9a223645f95cf379d582b", (".",)),
    # Library code and its tests (added in stop 38): the same two libraries beyond their training
    # scripts, where most of the code is layers, datasets, samplers and unit tests.
    Project("pyg-library", "pyg-team/pytorch_geometric", "5c6461b2305ad068a6d61165b3c55852a11aaa41",
            ("torch_geometric", "test", "benchmark", "graphgym"), exclude=("docs",)),
    Project("timm-library", "huggingface/pytorch-image-models", "aa4b5850c1543fa488abf260f18390eda46cf85d",
            ("timm/models", "timm/layers", "timm/data", "tests"), exclude=("docs",)),
    # Research code bases (added in stop 38): the repositories of reported bugs, at their current
    # commits, read whole (vendored third-party code left out).
    Project("siamese-triplet", "adambielski/siamese-triplet", "0c719f9e8f59fa386e8c59d10b2ddde9fac46276", (".",)),
    Project("vsepp", "fartashf/vsepp", "abe382fd9c751d1b92c95030df8fb804a7d5ef53", (".",)),
    Project("scae", "mlberkeley/scae-pytorch", "f44748b0a146580cb41886336b6a35c80287f28b", (".",)),
    Project("shortgpt", "sramshetty/ShortGPT", "78d9615fdcae6d90368832bd0a86c49c323549b9", (".",)),
    Project("deformable-protopnet", "jdonnelly36/Deformable-ProtoPNet", "92d3ab688e46767f9c70552e4e7d68a67e12ddad",
            (".",)),
    Project("everydream2", "victorchall/EveryDream2trainer", "5098db8325c2b5951b342156556b938b642a0338", (".",)),
    Project("pytorch-fcn", "wkentaro/pytorch-fcn", "4b988509bfd1a613d5e8482595a1c6654047d69b", (".",),
            exclude=("tests", "test", "docs", "ext")),
    Project("transformers-classification", "ThilinaRajapakse/pytorch-transformers-classification",
            "f2e87fccd06dc1e4222d455685692366163426b6", (".",)),
    Project("moco", "facebookresearch/moco", "132aea9da9bb995a411c915c0420be3db62052f3", (".",)),
    Project("d2-net", "mihaidusmanu/d2-net", "0a3356c6991c634ef4cce3ea6e07115202fb99a1", (".",)),
    Project("cornn", "tk-rusch/coRNN", "afd81744d108a2d623761b635b4ba56770d9e05d", (".",)),
    Project("nerf-pytorch", "yenchenlin/nerf-pytorch", "63a5a630c9abd62b0f21c08703d0ac2ea7d4b9dd", (".",)),
    Project("pytorch-widedeep", "jrzaurin/pytorch-widedeep", "268dad9c228d3e6c598d677a023979707524a313", (".",)),
    Project("torch-vectorized", "banctilrobitaille/torch-vectorized", "3a982d73021d8e770a41e237885128236a1462f4",
            (".",)),
    # Held-out training projects (added in stop 39): well-known repositories no rule was written
    # against, measured before any change drawn from them.
    Project("pytorch-unet", "milesial/Pytorch-UNet", "21d7850f2af30a9695bbeea75f3136aa538cfc4a", (".",)),
    Project("pytorch-gan", "eriklindernoren/PyTorch-GAN", "36d3c77e5ff20ebe0aeefd322326a134a279b93e", (".",)),
    Project("pytorch-cifar", "kuangliu/pytorch-cifar", "49b7aa97b0c12fe0d4054e670403a16b6b834ddd", (".",)),
    Project("detr", "facebookresearch/detr", "29901c51d7fe8712168b8d0d64351170bc0f83e0", (".",)),
    Project("deit", "facebookresearch/deit", "7e160fe43f0252d17191b71cbb5826254114ea5b", (".",)),
    Project("simsiam", "facebookresearch/simsiam", "a7bc1772896d0dad0806c51f0bb6f3b16d290468", (".",)),
    Project("open-clip", "mlfoundations/open_clip", "89fb801f1e6087880e951fc8354b8a2077b79c6d", (".",)),
    Project("hifi-gan", "jik876/hifi-gan", "4769534d45265d52a904b850da5a622601885777", (".",)),
    Project("a2c-ppo", "ikostrikov/pytorch-a2c-ppo-acktr-gail", "41332b78dfb50321c29bade65f9d244387f68a60",
            (".",)),
    Project("llm-c", "karpathy/llm.c", "f1e2ace651495b74ae22d45d1723443fd00ecd3a", (".",)),
    Project("stanford-alpaca", "tatsu-lab/stanford_alpaca", "761dc5bfbdeeffa89b8bff5d038781a4055f796a", (".",)),
    Project("transformer-tutorial", "jadore801120/attention-is-all-you-need-pytorch",
            "132907dd272e2cc92e3c10e6c4e783a87ff8893d", (".",)),
    Project("lightning-hydra", "ashleve/lightning-hydra-template", "bddbc24b82ab6ccfa6243e815a49dc5bfe8d4144",
            (".",)),
    Project("stylegan2-ada", "NVlabs/stylegan2-ada-pytorch", "d72cc7d041b42ec8e806021a205ed9349f87c6a4", (".",)),
    Project("dinov2", "facebookresearch/dinov2", "b8931f7bf91576930313be2c6d6af376033b35f0", (".",)),
    Project("swin", "microsoft/Swin-Transformer", "f82860bfb5225915aca09c3227159ee9e1df874d", (".",)),
    Project("barlowtwins", "facebookresearch/barlowtwins", "8e8d284ca0bc02f88b92328e53f9b901e86b4a3c", (".",)),
    Project("llava", "haotian-liu/LLaVA", "c121f0432da27facab705978f83c4ada465e46fd", (".",)),
    Project("image-captioning", "sgrvinod/a-PyTorch-Tutorial-to-Image-Captioning",
            "cc9c7e2f4017938d414178d3781fed8dbe442852", (".",)),
    # A second held-out batch (stop 39), measured after the changes drawn from the first: how far
    # those changes generalise.
    Project("pytorch-tutorial", "yunjey/pytorch-tutorial", "0500d3df5a2a8080ccfccbc00aca0eacc21818db", (".",)),
    Project("pytorch-vae", "AntixK/PyTorch-VAE", "a6896b944c918dd7030e7d795a8c13e5c6345ec7", (".",)),
    Project("simclr", "sthalles/SimCLR", "1848fc934ad844ae630e6c452300433fe99acfd9", (".",)),
    Project("swav", "facebookresearch/swav", "06b1b7cbaf6ba2a792300d79c7299db98b93b7f9", (".",)),
    Project("moco-v3", "facebookresearch/moco-v3", "c349e6e24f40d3fedb22d973f92defa4cedf37a7", (".",)),
    Project("convnext", "facebookresearch/ConvNeXt", "048efcea897d999aed302f2639b6270aedf8d4c8", (".",)),
    Project("stylegan2-rosinality", "rosinality/stylegan2-pytorch", "bef283a1c24087da704d16c30abc8e36e63efa0e",
            (".",)),
    Project("tacotron2", "NVIDIA/tacotron2", "185cd24e046cc1304b4f8e564734d2498c6e2e6f", (".",)),
    Project("improved-diffusion", "openai/improved-diffusion", "1bc7bbbdc414d83d4abf2ad8cc1446dc36c4e4d5", (".",)),
    Project("taming-transformers", "CompVis/taming-transformers", "3ba01b241669f5ade541ce990f7650a3b8f65318",
            (".",)),
    Project("blip", "salesforce/BLIP", "056a169437371659074aa2732649d5de3bffb4a8", (".",)),
    Project("3d-resnets", "kenshohara/3D-ResNets-PyTorch", "540a0ea1abaee379fa3651d4d5afbd2d667a1f49", (".",)),
    Project("dalle-pytorch", "lucidrains/DALLE-pytorch", "58c1e1a4fef10725a79bd45cdb5581c03e3e59e7", (".",)),
    Project("clip", "openai/CLIP", "d05afc436d78f1c48dc0dbf8e5980a9d471f35f6", (".",)),
    # A third held-out batch (stop 39), measured after the changes drawn from the first two.
    Project("makemore", "karpathy/makemore", "988aa59e4d8fefa526d06f3b453ad116258398d4", (".",)),
    Project("vq-vae-2", "rosinality/vq-vae-2-pytorch", "ef5f67c46f93624163776caec9e0d95063910eca", (".",)),
    Project("edm", "NVlabs/edm", "008a4e5316c8e3bfe61a62f874bddba254295afb", (".",)),
    Project("glide", "openai/glide-text2im", "69b530740eb6cef69442d6180579ef5ba9ef063e", (".",)),
    Project("latent-diffusion", "CompVis/latent-diffusion", "a506df5756472e2ebaf9078affdde2c4f1502cd4", (".",)),
    Project("real-esrgan", "xinntao/Real-ESRGAN", "a4abfb2979a7bbff3f69f58f58ae324608821e27", (".",)),
    Project("pytorch-fid", "mseitzer/pytorch-fid", "b9c18118d082cbd263c1b8963fc4221dc1cbb659", (".",)),
    Project("deep-person-reid", "KaiyangZhou/deep-person-reid", "f8cd150fdf77e8d9e1ed143b7f308c2c609ded50", (".",)),
    Project("convnext-v2", "facebookresearch/ConvNeXt-V2", "2553895753323c6fe0b2bf390683f5ea358a42b9", (".",)),
    Project("lpips", "richzhang/PerceptualSimilarity", "082bb24f84c091ea94de2867d34c4544f68e0963", (".",)),
    # A fourth held-out batch (stop 40), measured with stop 39's code before any change drawn from it.
    Project("supcontrast", "HobbitLong/SupContrast", "66a8fe53880d6a1084b2e4e0db0a019024d6d41a", (".",)),
    Project("repdistiller", "HobbitLong/RepDistiller", "b84f547c5db6a35318d4671d7d5c4de74c822403", (".",)),
    Project("pygcn", "tkipf/pygcn", "1600b5b748b3976413d1e307540ccc62605b4d6d", (".",)),
    Project("pygat", "Diego999/pyGAT", "3664f2dc90cbf971564c0bf186dc794f12446d0c", (".",)),
    Project("minimalrl", "seungeunrho/minimalRL", "c8efed8481e3cd40e9739cfde220a55522555b57", (".",)),
    Project("pointnet", "fxia22/pointnet.pytorch", "bafbf401e0af19be3262e448c59313fd2be0e421", (".",)),
    Project("pointnet2", "yanx27/Pointnet_Pointnet2_pytorch", "eb64fe0b4c24055559cea26299cb485dcb43d8dd", (".",)),
    Project("deeplabv3plus", "VainF/DeepLabV3Plus-Pytorch", "4e1087de98bc49d55b9239ae92810ef7368660db", (".",)),
    Project("modded-nanogpt", "KellerJordan/modded-nanogpt", "f411b3d346aa52d3504324ca93c230fd84c6c07f", (".",),
            exclude=("tests", "test", "docs", "records")),  # records/: 100 archived copies of train_gpt.py
    Project("tinyllama", "jzhang38/TinyLlama", "bf122247c486b6b897050e98cbb7bedae8eeba73", (".",)),
    Project("sam-optimizer", "davda54/sam", "3c3afdbd71cff2462ec91c734b3d1170bd0f3707", (".",)),
    Project("cutmix", "clovaai/CutMix-PyTorch", "2d8eb68faff7fe4962776ad51d175c3b01a25734", (".",)),
    Project("byol", "lucidrains/byol-pytorch", "299312613c1f44923e7869d1c82be7d536c2c42b", (".",)),
    Project("object-detection-tutorial", "sgrvinod/a-PyTorch-Tutorial-to-Object-Detection",
            "5d5b75968c3cf1ffd2718bf828a7560b7ee8e8b5", (".",)),
    Project("ddim", "ermongroup/ddim", "e8df66cf02e457719930748b5c26e37e3126dfdd", (".",)),
    Project("text-recognition", "clovaai/deep-text-recognition-benchmark",
            "e2117f2fb882b3c6085030500a260c113be27a63", (".",)),
    Project("dgcnn", "WangYueFt/dgcnn", "f765b469a67730658ba554e97dc11723a7bab628", (".",)),
    Project("image-segmentation", "LeeJunHyun/Image_Segmentation", "5e9da9395c52b119d55dfc6532c34ac0e88f446e", (".",)),
    Project("qlora", "artidoro/qlora", "7f4e95a68dc076bea9b3a413d2b512eca6d004e5", (".",)),
    Project("mixup-cifar10", "facebookresearch/mixup-cifar10", "eaff31ab397a90fbc0a4aac71fb5311144b3608b", (".",)),
    Project("ng-video-lecture", "karpathy/ng-video-lecture", "52201428ed7b46804849dea0b3ccf0de9df1a5c3", (".",)),
    Project("pytorch-cifar100", "weiaicunzai/pytorch-cifar100", "11d8418f415b261e4ae3cb1ffe20d06ec95b98e4", (".",)),
    Project("domainbed", "facebookresearch/DomainBed", "b93c22a1cfc3b2428398272c1a116c8de1f4139e", (".",)),
    # A fifth held-out batch (stop 40), measured after the changes drawn from the fourth.
    Project("ssd-pytorch", "amdegroot/ssd.pytorch", "5b0b77faa955c1917b0c710d770739ba8fbff9b7", (".",)),
    Project("pytorch-yolov3", "eriklindernoren/PyTorch-YOLOv3", "1d621c8489e22c76ceb93bb2397ac6c8dfb5ceb7", (".",)),
    Project("pix2pixhd", "NVIDIA/pix2pixHD", "14b3b3c7fff413086e3b58df52096f16b6891172", (".",)),
    Project("spade", "NVlabs/SPADE", "fecacc920c1367a038995c45a39c15f6521ca64f", (".",)),
    Project("cut-translation", "taesungp/contrastive-unpaired-translation",
            "b3ac297708dfb6f7589d04662277e53c0d579c27", (".",)),
    Project("stargan", "yunjey/stargan", "94dd002e93a2863d9b987a937b85925b80f7a19f", (".",)),
    Project("biggan", "ajbrock/BigGAN-PyTorch", "98459431a5d618d644d54cd1e9fceb1e5045648d", (".",)),
    Project("yolox", "Megvii-BaseDetection/YOLOX", "6ddff4824372906469a7fae2dc3206c7aa4bbaee", (".",)),
    Project("yolov7", "WongKinYiu/yolov7", "a207844b1ce82d204ab36d87d496728d3d2348e7", (".",)),
    Project("u2net", "xuebinqin/U-2-Net", "ac7e1c817ecab7c7dff5ce6b1abba61cd213ff29", (".",)),
    Project("gfpgan", "TencentARC/GFPGAN", "7552a7791caad982045a7bbe5634bbf1cd5c8679", (".",)),
    Project("swinir", "JingyunLiang/SwinIR", "6545850fbf8df298df73d81f3e8cba638787c8bd", (".",)),
    Project("vicreg", "facebookresearch/vicreg", "4e12602fd495af83efd1631fbe82523e6db092e0", (".",)),
    Project("ijepa", "facebookresearch/ijepa", "52c1ae95d05f743e000e8f10a1f3a79b10cff048", (".",)),
    Project("vit-pytorch-jeonsworld", "jeonsworld/ViT-pytorch", "460a162767de1722a014ed2261463dbbc01196b6", (".",)),
    Project("pytorch-semseg", "meetps/pytorch-semseg", "801fb200547caa5b0d91b8dde56b837da029f746", (".",)),
    Project("csail-semseg", "CSAILVision/semantic-segmentation-pytorch",
            "8f27c9b97d2ca7c6e05333d5766d144bf7d8c31b", (".",)),
    Project("efficientnet-pytorch", "lukemelas/EfficientNet-PyTorch",
            "7e8b0d312162f335785fb5dcfa1df29a75a1783a", (".",)),
    Project("vit-cifar10", "kentaroy47/vision-transformers-cifar10",
            "5bb83d36018b314c3020558541015bb01bce15bc", (".",)),
    Project("stylegan2-lucidrains", "lucidrains/stylegan2-pytorch", "ce7f830bc10d037cddc75d6166904baf07945cf6", (".",)),
    # A sixth held-out batch (stop 41), measured with stop 40's code before any change drawn from
    # it: sequence models, time series, speech, RL, tabular, diffusion fine-tuning; two projects
    # that live in notebooks.
    Project("pytorch-seq2seq", "bentrevett/pytorch-seq2seq", "b3cd54c72cd6e4e63f672d334c795b4fe744ef92",
            (".",), notebooks=True),
    Project("rl-adventure", "higgsfield/RL-Adventure", "0f82b6922e8a1a8515fc4c84c28702e7caa226f1", (".",),
            notebooks=True),
    Project("awd-lstm-lm", "salesforce/awd-lstm-lm", "1d466ec5875675ca6b6f0caacbb741240a29da9e", (".",)),
    Project("tcn", "locuslab/TCN", "2f8c2b817050206397458dfd1f5a25ce8a32fe65", (".",)),
    Project("td3", "sfujim/TD3", "34770ccdcb51df6f6c7d85c1ba7e40d71b940d16", (".",)),
    Project("soft-actor-critic", "pranz24/pytorch-soft-actor-critic", "c1805660b3961694be54079a355155a5cad492f5",
            (".",)),
    Project("informer", "zhouhaoyi/Informer2020", "29f2a739226a509202a092b464163da81fa74960", (".",)),
    Project("autoformer", "thuml/Autoformer", "51c7d416ae120b805fd5beef2f4ccf7de496a6ff", (".",)),
    Project("tabnet", "dreamquark-ai/tabnet", "2c0c4ebd2bb1cb639ea94ab4b11823bc49265588", (".",)),
    Project("vits", "jaywalnut310/vits", "2e561ba58618d021b5b8323d3765880f7e0ecfdb", (".",)),
    Project("waveglow", "NVIDIA/waveglow", "8afb643df59265016af6bd255c7516309d675168", (".",)),
    Project("whisper", "openai/whisper", "c0d2f624c09dc18e709e37c2ad90c039a4eb72a2", (".",)),
    Project("segment-anything", "facebookresearch/segment-anything", "dca509fe793f601edb92606367a655c15ac00fdf",
            (".",)),
    # ControlNet without its vendored copies (annotators from other projects; ldm is latent-diffusion's)
    Project("controlnet", "lllyasviel/ControlNet", "ed85cd1e25a5ed592f7d8178495b4483de0331bf", (".",),
            exclude=("tests", "test", "docs", "annotator", "ldm")),
    Project("lora-cloneofsimo", "cloneofsimo/lora", "d84074b3e3496f1cfa8a3f49b8b9972ef463b483", (".",)),
    Project("transformer-xl", "kimiyoung/transformer-xl", "44781ed21dbaec88b280f74d9ae2877f52b492a5",
            ("pytorch",)),
    Project("t2t-vit", "yitu-opensource/T2T-ViT", "0f63dc9558f4d192de926504dbddfa1b3f5db6ca", (".",)),
    Project("dpr", "facebookresearch/DPR", "a31212dc0a54dfa85d8bfa01e1669f149ac832b7", (".",)),
    Project("diffusion-policy", "real-stanford/diffusion_policy", "5ba07ac6661db573af695b419a7947ecb704690f",
            (".",)),
    Project("nerf-pl", "kwea123/nerf_pl", "52aeb387da64a9ad9a0f914ea9b049ffc598b20c", (".",)),
    # A seventh held-out batch (stop 41), measured with the stop's final code before any change drawn
    # from it: how far the sixth batch's and set r's changes carry.
    Project("rainbow-kaixhin", "Kaixhin/Rainbow", "1745b184c3dfc03d4ffa3ce2342ced9996b39a60", (".",)),
    Project("deeprl-shangtong", "ShangtongZhang/DeepRL", "c0968b5c046314af09944843cdf06f4100c6bb95", (".",)),
    Project("xlm", "facebookresearch/XLM", "cd281d32612d145c6742b4d3f048f80df8669c30", (".",)),
    Project("nlp-tutorial", "graykode/nlp-tutorial", "d05e31ec81d56d70c1db89b99ab07e948f7ebc11", (".",),
            notebooks=True),
    Project("melgan", "descriptinc/melgan-neurips", "6488045bfba1975602288de07a58570c7b4d66ea", (".",)),
    Project("demucs", "facebookresearch/demucs", "e976d93ecc3865e5757426930257e200846a520a", (".",)),
    Project("srgan-leftthomas", "leftthomas/SRGAN", "7ddfdf27273c42d858ec52cab5ca1cbfca81d0be", (".",)),
    Project("efficientdet-zylo", "zylo117/Yet-Another-EfficientDet-Pytorch",
            "15403b5371a64defb2a7c74e162c6e880a7f462c", (".",)),
    Project("wavenet-vocoder", "r9y9/wavenet_vocoder", "a35fff76ea3687b05e1a10023cad3f7f64fa25a3", (".",)),
    Project("sentiment-analysis", "bentrevett/pytorch-sentiment-analysis",
            "329f654b2cfaed22fee432569ebd7a2674584f79", (".",), notebooks=True),
    Project("rcan", "yulunzhang/RCAN", "f722e5d0e1eff45148bfaefd9bc85c6f0f26ce02", (".",)),
    Project("stargan-v2", "clovaai/stargan-v2", "875b70a150609e8a678ed8482562e7074cdce7e5", (".",)),
    Project("stylegan3", "NVlabs/stylegan3", "c233a919a6faee6e36a316ddd4eddababad1adf9", (".",)),
    Project("raft", "princeton-vl/RAFT", "2888e15a51fa41140771d3f498ed8023cff098d1", (".",)),
    Project("glow-rosinality", "rosinality/glow-pytorch", "97081ff115a694cf04aeedbd58447f33d242c879", (".",)),
    Project("retinanet-kuangliu", "kuangliu/pytorch-retinanet", "2d7c663350f330a34771a8fa6a4f37a2baa52a1d",
            (".",)),
    # Held-out batch 8 (stop 42): tutorials people learn from, RL, speech, detection, LLM fine-tuning
    # and LoRA training scripts; measured with the code as it stood before any change for them.
    Project("morvan-tutorial", "MorvanZhou/PyTorch-Tutorial", "dbe154a9e56635e51c6b0c2ccea8ae36cfb585a7", (".",)),
    Project("voice-cloning", "CorentinJ/Real-Time-Voice-Cloning", "865eba8826bb6d76721a9d828a546724779c23ab",
            (".",)),
    Project("deep-rl-pchrist", "p-christ/Deep-Reinforcement-Learning-Algorithms-with-PyTorch",
            "4835bac8557fdacff1735eca004e35ea5a4b7443", (".",)),
    Project("sd-scripts", "kohya-ss/sd-scripts", "48d368fa557731ad0488c07304dfeba8c07910eb", (".",)),
    Project("llama-recipes", "meta-llama/llama-recipes", "faae2fd877995430906e1d0904131ecdaa89a604",
            ("src/llama_cookbook", "getting-started")),
    Project("llms-from-scratch", "rasbt/LLMs-from-scratch", "28c65cdfbc3338e2e040016eea4b7fdf556e4d57", (".",),
            notebooks=True),
    Project("nn-zero-to-hero", "karpathy/nn-zero-to-hero", "73c3fcc741f0ec104ca850b1fb0df90e7e8d4cde", (".",),
            notebooks=True),
    Project("lora-microsoft", "microsoft/LoRA", "c4593f060e6a368d7bb5af5273b8e42810cdef90",
            ("loralib", "examples/NLG/src")),
    Project("simcse", "princeton-nlp/SimCSE", "49fa580a853752ede55b8c76d9debf748e214d3f", (".",)),
    Project("resnet-cifar10-akamaster", "akamaster/pytorch_resnet_cifar10", "d5489e8995e81e91ce6b1d69dcc98ad579b0b153",
            (".",)),
    Project("deepspeech-pytorch", "SeanNaren/deepspeech.pytorch", "b88a631ef6b96553e16bbaa5bd6a621435bed278", (".",)),
    Project("yolov4-tianxiaomo", "Tianxiaomo/pytorch-YOLOv4", "a65d219f9066bae4e12003bd7cdc04531860c672", (".",)),
    Project("image-processing-wzmiaomiao", "WZMIAOMIAO/deep-learning-for-image-processing",
            "2ecf2eea2b97777bb18fe9ff458292fde5a92b7e", (".",)),
    Project("pytorch-classification-bearpaw", "bearpaw/pytorch-classification",
            "24f1c456f48c78133088c4eefd182ca9e6199b03", (".",)),
    Project("spinningup", "openai/spinningup", "038665d62d569055401d91856abb287263096178", (".",)),
    Project("yolov4-bubbliiiing", "bubbliiiing/yolov4-pytorch", "9571c250a3e26946eabc39398320fba8a045a90b", (".",)),
    # Held-out batch 9 (stop 43): RL and LLM-training libraries, trainer examples, lecture notebooks, MRI,
    # differential privacy, semi-supervised learning, detection
    Project("stable-baselines3", "DLR-RM/stable-baselines3", "e05d2dbe6eda0acd0ef2e316e3e4065677add3eb",
            ("stable_baselines3",)),
    Project("litgpt", "Lightning-AI/litgpt", "26857050fe3ff627cd714fe92f5838f51a3d5efa", ("litgpt", "extensions")),
    Project("trl", "huggingface/trl", "f2cd57710ae345ea6428ae95363267fcf38a3dc8", ("trl", "examples")),
    Project("ignite-examples", "pytorch/ignite", "de08e799cfb55a6cf4aa778575d6bad725385453", ("examples",),
            notebooks=True),
    Project("image-classification-bentrevett", "bentrevett/pytorch-image-classification",
            "33c9cfdb9097bc65b5800c1996f199f0ba520888", (".",), notebooks=True),
    Project("fastmri", "facebookresearch/fastMRI", "91f2df4711adbb6d643df1810f234e4abcf5881b",
            ("fastmri", "fastmri_examples", "banding_removal", "fastMRI_tutorial.ipynb"), notebooks=True),
    Project("pytorch-zero-to-all", "hunkim/PyTorchZeroToAll", "e5a260fac0b4ff1e2ec434fc6f0d962ac97fc289", (".",)),
    Project("transformer-hkproj", "hkproj/pytorch-transformer", "3beddd2604bfa5e0fbd53f52361bd887dc027a8c", (".",),
            notebooks=True),
    Project("opacus", "pytorch/opacus", "4d0ebc84613d214fbfd37fbfd1390e3747a625ce",
            ("opacus", "examples", "tutorials"), notebooks=True),
    Project("d2l-pytorch", "dsgiitr/d2l-pytorch", "e84da49a9ea4ba448f4aaf2d18ecd9edafaa2419", (".",), notebooks=True),
    Project("usb-semilearn", "microsoft/Semi-supervised-learning", "1ef4cbebcc0b368158315aeb425053858cf6c845",
            ("semilearn", "train.py", "eval.py", "scripts")),
    Project("srgan-lornatang", "Lornatang/SRGAN-PyTorch", "8842030eb433f8578a77328060121fa5a9a3cb43", (".",)),
    Project("imagen-pytorch", "lucidrains/imagen-pytorch", "c166739b03b06fbc2e7c00116ffc81724626ad08",
            ("imagen_pytorch",)),
    Project("detectron2", "facebookresearch/detectron2", "02b5c4e295e990042a714712c21dc79b731e8833",
            ("detectron2", "tools", "projects")),
    # Held-out batch 10 (stop 44): course notebooks, loss collections, segmentation, vector quantisation,
    # RL library, LLM pre-training, score-based diffusion, self-supervised recipes, detection, Gaussian processes
    Project("pytorch-deep-learning-mrdbourke", "mrdbourke/pytorch-deep-learning",
            "baa27b691617461c173ecf3439793cd8cde74e13", (".",), notebooks=True),
    Project("udacity-deep-learning", "udacity/deep-learning-v2-pytorch", "c9404fc86181fc3f0906b368697268257f348535",
            (".",), notebooks=True),
    Project("nyu-dlsp20", "Atcold/NYU-DLSP20", "3049c83260ba05700e2ab9b7ed13cdbe5ddba0fd", (".",), notebooks=True),
    Project("pytorch-loss", "CoinCheung/pytorch-loss", "67d015844e4597c3ff6895fc831cd22ac7d59299", (".",)),
    Project("segmentation-models", "qubvel/segmentation_models.pytorch", "bd7f877fec51309a1a7de7670aed232954450037",
            ("segmentation_models_pytorch", "examples"), notebooks=True),
    Project("vector-quantize", "lucidrains/vector-quantize-pytorch", "0d7d1aa83334b6f2f8a40306bece75cdaa13d065",
            ("vector_quantize_pytorch", "examples")),
    Project("tianshou", "thu-ml/tianshou", "f2402056b03acafeedf2518a5088db55add004ab", ("tianshou", "examples")),
    Project("olmo", "allenai/OLMo", "59a53e3f68e546330ca5a99ec626e58f9ab96494", ("olmo", "scripts", "hf_olmo")),
    Project("score-sde", "yang-song/score_sde_pytorch", "cb1f359f4aadf0ff9a5e122fe8fffc9451fd6e44", (".",),
            notebooks=True),
    Project("lightning-bolts", "Lightning-Universe/lightning-bolts", "34958a8892d42714edf02ba896fd5861ebb3cb7e",
            ("src",)),
    Project("faster-rcnn-jwyang", "jwyang/faster-rcnn.pytorch", "f9d984d27b48a067b29792932bcb5321a39c1f09", (".",)),
    Project("x-transformers", "lucidrains/x-transformers", "9252ed7838021ee61e6c5be0930b3a9a88efdf06", (".",)),
    Project("gpytorch", "cornellius-gp/gpytorch", "7c4ec80f0f05cf530348a8a8972d67a11dd26ed2", ("gpytorch", "examples"),
            notebooks=True),
    Project("retinanet-yhenon", "yhenon/pytorch-retinanet", "0348a9d57b279e3b5b235461b472d37da5feec3d", (".",)),
    # Held-out batch 11 (stop 45): time series, explanation maps, vision transformers, latent diffusion,
    # video recognition, consistency models, distributed-training library, LLM fine-tuning recipes, graph
    # benchmarks, segmentation, RL and classic-model notebooks, LLM pre-training
    Project("time-series-library", "thuml/Time-Series-Library", "4e938a1767106324dd753b2a44832bf870a0252e", (".",),
            notebooks=True),
    Project("grad-cam", "jacobgil/pytorch-grad-cam", "084273b3f30b54ad0c64cf8020a4337d979a66e0",
            ("pytorch_grad_cam", "cam.py", "usage_examples", "tutorials"), notebooks=True),
    Project("vit-pytorch", "lucidrains/vit-pytorch", "69d24fe9e3024c0d4b02761123b8583a24ebed1e",
            ("vit_pytorch", "examples", "train_vit_decorr.py"), notebooks=True),
    Project("stable-diffusion", "CompVis/stable-diffusion", "21f890f9da3cfbeaba8e2ac3c425ee9e998d5229",
            ("ldm", "scripts", "main.py", "notebook_helpers.py")),
    Project("slowfast", "facebookresearch/SlowFast", "287ec0076846560f44a9327e931a5a2360240533",
            ("slowfast", "tools", "projects")),
    Project("consistency-models", "openai/consistency_models", "e32b69ee436d518377db86fb2127a3972d0d8716",
            ("cm", "scripts")),
    Project("accelerate", "huggingface/accelerate", "16cb6eb80dd9aa8b4df1a63ef57863e455d53b83", ("src", "examples")),
    Project("torchtune", "pytorch/torchtune", "bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1", ("torchtune", "recipes")),
    Project("benchmarking-gnns", "graphdeeplearning/benchmarking-gnns", "b6c407712fa576e9699555e1e035d1e327ccae6c",
            (".",), notebooks=True),
    Project("hrnet-seg", "HRNet/HRNet-Semantic-Segmentation", "0bbb2880446ddff2d78f8dd7e8c4c610151d5a51",
            ("lib", "tools")),
    Project("generative-models", "Stability-AI/generative-models", "0ad7de9a5cb53fd63d6d30a4f385485e72e08597",
            ("sgm", "scripts", "main.py")),
    Project("pytorch-rl-bentrevett", "bentrevett/pytorch-rl", "7f43f3df8042e687daaad728b07b7e35d4e27415", (".",),
            notebooks=True),
    Project("deeplearning-models-rasbt", "rasbt/deeplearning-models", "18e046926551378cd691fd871dda0f21dcd272ab",
            ("pytorch_ipynb", "pytorch-lightning_ipynb", "templates"), notebooks=True),
    Project("gpt-neox", "EleutherAI/gpt-neox", "ea7aefd8f8e183256992d9fede4d7c71a46d67a5",
            ("megatron", "train.py", "eval.py", "generate.py", "tools", "post-training")),
)


def mirror(project: Project) -> Path | None:
    roots = [Path(p) for p in os.environ.get("TORCHLINT_MIRRORS", "").split(os.pathsep) if p]
    roots.append(Path("/work/.mirror"))
    for root in roots:
        candidate = root / project.repo.replace("/", "+") / "repo"
        if (candidate / ".git").is_dir():  # a snapshot fetched with its work tree
            return candidate / ".git"
        if candidate.is_dir():
            return candidate
    return None


def extract(project: Project) -> Path | None:
    """The project's files at its commit, extracted once; None when no mirror is on this machine."""
    target = EXTRACTED / project.name
    stamp = target / ".torchlint-corpus-commit"
    if stamp.is_file() and stamp.read_text().strip() == f"{project.commit} {CONTENTS}":
        (target / ".git").mkdir(exist_ok=True)
        return target
    source = mirror(project)
    if source is None:
        return None
    listing = subprocess.run(
        ["git", "--git-dir", str(source), "ls-tree", "-r", "-z", project.commit, "--",
         *[p for p in project.paths if p != "."]],
        check=True, capture_output=True,
    ).stdout.decode()
    blobs = []
    for entry in filter(None, listing.split("\0")):
        meta, name = entry.split("\t", 1)
        if meta.split()[1] == "blob" and _kept(name, project):
            blobs.append((meta.split()[2], name))
    # A snapshot may lack its largest blobs; `cat-file --batch` says "missing" for those.
    contents = subprocess.run(
        ["git", "--git-dir", str(source), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha, _ in blobs).encode(), check=True, capture_output=True,
    ).stdout
    if target.exists():
        subprocess.run(["rm", "-rf", str(target)], check=True)
    target.mkdir(parents=True)
    offset = 0
    for _sha, name in blobs:
        header_end = contents.index(b"\n", offset)
        header = contents[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(contents[offset:offset + size])
        offset += size + 1
    stamp.write_text(f"{project.commit} {CONTENTS}\n")
    # A checkout's root holds .git: without it the project root would be found above the corpus
    (target / ".git").mkdir(exist_ok=True)
    return target


METADATA = ("pyproject.toml", "setup.cfg", "setup.py", "environment.yml", "environment.yaml")
CONTENTS = "py+ipynb+metadata"  # what an extraction holds: a change re-extracts


def _kept(name: str, project: Project) -> bool:
    """Python files, and the metadata that says which PyTorch versions the project supports."""
    parts = name.split("/")
    wanted = name.endswith(".py") or parts[-1] in METADATA or (
        parts[-1].startswith("requirements") and parts[-1].endswith(".txt"))
    notebook = project.notebooks and name.endswith(".ipynb") and ".ipynb_checkpoints" not in parts
    return (wanted or notebook) and not any(p in project.exclude for p in parts[:-1])


def python_files(root: Path) -> list[Path]:
    return sorted(p for pattern in ("*.py", "*.ipynb") for p in root.rglob(pattern) if p.is_file())


def lines_of(files: list[Path]) -> int:
    return sum(len(f.read_bytes().splitlines()) for f in files)


def load_judgements() -> dict[tuple[str, str, int, str], tuple[str, str]]:
    table: dict[tuple[str, str, int, str], tuple[str, str]] = {}
    for sheet in sorted(JUDGEMENTS.glob("*.tsv")):
        with sheet.open(encoding="utf-8") as handle:
            for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                if not row or row[0].startswith("#") or row[0] == "project":
                    continue
                project, path, line, code, verdict, reason = (row + [""] * 6)[:6]
                if verdict not in VERDICTS:
                    raise SystemExit(f"{sheet.name}: bad verdict {verdict!r} in {row}")
                table[(project, path, int(line), code)] = (verdict, reason)
    return table


def run_project(project: Project, root: Path) -> tuple[list, int, int, float]:
    files = python_files(root)
    settings = Settings(root=root)
    started = time.perf_counter()
    results = check_files([root], settings, jobs=1, cache=False)
    elapsed = time.perf_counter() - started
    findings = []
    for result in results:
        for finding in result.findings:
            relative = Path(finding.path).resolve().relative_to(root.resolve()).as_posix()
            if finding.cell is not None:  # a notebook's line is within its cell
                relative = f"{relative}:cell {finding.cell}"
            findings.append((relative, finding))
    return findings, len(files), lines_of(files), elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", action="append", help="only these projects (repeatable)")
    parser.add_argument("--unjudged", action="store_true", help="print unjudged findings as TSV rows")
    parser.add_argument("--markdown", action="store_true", help="print the README tables")
    parser.add_argument("--list", action="store_true", help="print every finding with its verdict")
    parser.add_argument("--write-docs", action="store_true",
                        help="write each static rule's measured precision into rules/TLxxx.md")
    args = parser.parse_args(argv)

    judgements = load_judgements()
    chosen = [p for p in PROJECTS if not args.project or p.name in args.project]
    per_project = []
    per_rule: dict[str, Counter] = defaultdict(Counter)
    unjudged_rows = []
    listed = []
    reported_keys = set()
    skipped = []
    for project in chosen:
        root = extract(project)
        if root is None:
            skipped.append(project.name)
            continue
        findings, nfiles, nlines, elapsed = run_project(project, root)
        counts = Counter()
        for relative, finding in findings:
            key = (project.name, relative, finding.line, finding.code)
            reported_keys.add(key)
            verdict = judgements.get(key, ("UNJUDGED", ""))[0]
            counts[verdict] += 1
            per_rule[finding.code][verdict] += 1
            listed.append((key, verdict, finding.message))
            if verdict == "UNJUDGED":
                unjudged_rows.append("\t".join([project.name, relative, str(finding.line), finding.code, "?",
                                                finding.message.replace("\t", " ")]))
        per_project.append((project, nfiles, nlines, len(findings), counts, elapsed))

    lost = sorted(k for k, (v, _) in judgements.items()
                  if v == "TRUE" and k[0] in {p.name for p, *_ in per_project} and k not in reported_keys)

    if args.list:
        for key, verdict, message in listed:
            print(f"{verdict:8} {key[0]}:{key[1]}:{key[2]}: {key[3]} {message}")
    print(_tables(per_project, per_rule, markdown=args.markdown))
    if skipped:
        print(f"\nskipped (no mirror on this machine): {', '.join(skipped)}")
    elif args.write_docs and not args.project:
        write_docs(per_rule, sum(n for _, _, n, *_ in per_project))
    if lost:
        print(f"\nTRUE findings no longer reported ({len(lost)}):")
        for key in lost:
            print("  " + ":".join(map(str, key)))
    if unjudged_rows:
        print(f"\nunjudged findings: {len(unjudged_rows)}" + ("" if args.unjudged else " (--unjudged lists them)"))
        if args.unjudged:
            print("\n".join(unjudged_rows))
    return 0


MEASURED = "Measured on real code"


def write_docs(per_rule: dict[str, Counter], lines: int) -> None:
    """Put each default static rule's judged findings at the end of its doc's "What it does"."""
    from torchlint.catalog import rule_doc
    from torchlint.static.rules import STATIC_RULES

    docs = Path(__file__).resolve().parent.parent / "rules"
    for rule in STATIC_RULES:
        info = rule.info
        doc = rule_doc(info.code)
        if doc is None or "## Why is this bad?" not in doc:
            continue
        counts = per_rule.get(info.code, Counter())
        if not info.default_enabled:
            sentence = "off by default, not measured"
        elif not counts:
            sentence = "no findings"
        else:
            sentence = (f"{sum(counts.values())} finding{'' if sum(counts.values()) == 1 else 's'} judged {counts['TRUE']} true, {counts['FALSE']} false, "
                        f"{counts['NOISE']} noise ({_precision(counts)} precision)")
        line = (f"{MEASURED} (`python bench/corpus.py`: {len(PROJECTS)} public projects, "
                f"{lines / 1000:.0f} KLOC, each finding judged by reading the code): {sentence}.")
        head, tail = doc.split("## Why is this bad?", 1)
        kept = [p for p in head.rstrip().split("\n\n") if not p.startswith(MEASURED)]
        (docs / f"{info.code}.md").write_text("\n\n".join(kept) + "\n\n" + line + "\n\n## Why is this bad?" + tail,
                                               encoding="utf-8")


def _precision(counts: Counter) -> str:
    judged = counts["TRUE"] + counts["FALSE"] + counts["NOISE"]
    return f"{100 * counts['TRUE'] / judged:.0f}%" if judged else "-"


def _tables(per_project, per_rule, markdown: bool) -> str:
    out = []
    header = ("project", "files", "KLOC", "findings", "true", "false", "noise", "unjudged", "precision",
              "KLOC/finding", "time")
    rows = []
    total = Counter()
    tfiles = tlines = tfindings = 0
    ttime = 0.0
    for project, nfiles, nlines, nfindings, counts, elapsed in per_project:
        rows.append((project.name, nfiles, f"{nlines / 1000:.1f}", nfindings, counts["TRUE"], counts["FALSE"],
                     counts["NOISE"], counts["UNJUDGED"], _precision(counts),
                     f"{nlines / 1000 / nfindings:.1f}" if nfindings else "-", f"{elapsed:.1f}s"))
        total.update(counts)
        tfiles += nfiles
        tlines += nlines
        tfindings += nfindings
        ttime += elapsed
    rows.append(("**total**" if markdown else "total", tfiles, f"{tlines / 1000:.1f}", tfindings, total["TRUE"],
                 total["FALSE"], total["NOISE"], total["UNJUDGED"], _precision(total),
                 f"{tlines / 1000 / tfindings:.1f}" if tfindings else "-", f"{ttime:.1f}s"))
    out.append(_render(header, rows, markdown))
    out.append("")
    rule_rows = []
    for code in sorted(per_rule):
        counts = per_rule[code]
        rule_rows.append((code, sum(counts.values()), counts["TRUE"], counts["FALSE"], counts["NOISE"],
                          counts["UNJUDGED"], _precision(counts)))
    out.append(_render(("rule", "findings", "true", "false", "noise", "unjudged", "precision"), rule_rows,
                       markdown))
    return "\n".join(out)


def _render(header, rows, markdown: bool) -> str:
    cells = [tuple(str(c) for c in header)] + [tuple(str(c) for c in row) for row in rows]
    if markdown:
        lines = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells)


if __name__ == "__main__":
    sys.exit(main())
