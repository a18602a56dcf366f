import { Injectable, Module } from '@nestjs/common';

/** An extension whose provider fails as the app builds it: the start must stop, naming the extension. */
@Injectable()
export class FailingProvider {
  constructor() {
    throw new Error('cannot reach the inventory service');
  }
}

@Module({ providers: [FailingProvider] })
export class ProviderThrowsModule {}
