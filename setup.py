"""Package set-up read from `settings.ini` (the nbdev 2 layout).

The nbdev 2 template imported `pkg_resources` to parse requirements; setuptools no longer ships it
on current Pythons, so requirements are plain strings here and parsed by pip itself.
"""
from configparser import ConfigParser
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read('settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']

for key in 'version description keywords author author_email license lib_name min_python git_url'.split():
    assert key in cfg, f'settings.ini is missing `{key}`'

licenses = {'apache2': 'Apache-2.0'}  # SPDX expression (license classifiers are deprecated in setuptools)
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature']
py_versions = ['3.10', '3.11', '3.12', '3.13']
min_python = cfg['min_python']

requirements = cfg.get('requirements', '').split()
dev_requirements = cfg.get('dev_requirements', '').split()
ray_requirements = cfg.get('ray_requirements', '').split()   # the optional Ray backend of the sweep runner
vision_requirements = cfg.get('vision_requirements', '').split()       # CIFAR-10, Tiny ImageNet
language_requirements = cfg.get('language_requirements', '').split()   # TinyStories, the Hugging Face callback

setuptools.setup(
    name=cfg['lib_name'],
    version=cfg['version'],
    license=licenses[cfg['license']],
    classifiers=[
        'Development Status :: ' + statuses[int(cfg['status'])],
        'Intended Audience :: ' + cfg['audience'].title(),
        'Natural Language :: ' + cfg['language'].title(),
    ] + ['Programming Language :: Python :: ' + v for v in py_versions[py_versions.index(min_python):]],
    url=cfg['git_url'],
    packages=setuptools.find_packages(include=[cfg['lib_name'], cfg['lib_name'] + '.*']),
    include_package_data=True,
    install_requires=requirements,
    extras_require={'dev': dev_requirements, 'ray': ray_requirements, 'vision': vision_requirements,
                    'language': language_requirements},
    python_requires='>=' + min_python,
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    zip_safe=False,
    entry_points={
        'console_scripts': cfg.get('console_scripts', '').split(),
        'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"],
    },
    author=cfg['author'],
    author_email=cfg['author_email'],
    description=cfg['description'],
    keywords=cfg['keywords'],
)
